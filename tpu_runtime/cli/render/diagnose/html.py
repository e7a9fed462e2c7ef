"""DiagnoseReport as one self-contained HTML page: inline CSS, inline SVG charts, no scripts, no URLs loaded.

For each torch.profiler trace with ProfilerStep#N events it draws a step timeline: each step's duration
split into data-loader wait and the rest, with the host-device syncs marked, above a time axis that shows
the gaps between steps. For an XProf profile it draws a roofline: the top ops as points at their
operational intensity (FLOP/B) and achieved FLOP/s on log-log axes, under the chip's roofline from the
profile's own peaks (per TensorCore, so comparable with the per-core rates of the ops). Charts come
from matplotlib's object API through the onboarding renderer's SVG helper (ids prefixed per chart,
fixed hash salt), and all report text goes through jinja2 autoescaping.
"""

from __future__ import annotations

import math

from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tpu_runtime.cli.render.diagnose import facts, profile_rows
from tpu_runtime.cli.render.html_page import page_template
from tpu_runtime.cli.render.svg import figure_svg
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.diagnose.profile_model import ProfileSummary
from tpu_runtime.diagnose.report import Citation, DiagnoseReport, TorchTraceSummary

__all__ = [
    "label_groups",
    "render_diagnose_html",
    "roofline_figure",
    "roofline_svg",
    "step_timeline_figure",
    "step_timeline_svg",
]

TEMPLATE_NAME = "diagnose.html.j2"
_COMPUTE, _LOADER, _SYNC = "#4c78a8", "#f58518", "#c62828"
_ROOF, _MEMORY, _PROGRAM = "#1d2330", "#f58518", "#c62828"
ROOFLINE_LABEL = "roofline: top ops by operational intensity and achieved FLOP/s per TensorCore"


def step_timeline_svg(trace: TorchTraceSummary, index: int = 0) -> Markup:
    """The step timeline as inline SVG; empty when the trace has no ProfilerStep#N events."""
    if not trace.steps:
        return Markup("")
    fig = step_timeline_figure(trace)
    return figure_svg(
        fig, f"steps{index}", "step durations with data loader time, and the steps on a time axis"
    )


def step_timeline_figure(trace: TorchTraceSummary) -> Figure:
    """Two panels: per-step duration (data loader part stacked) and the steps laid out in time."""
    steps = trace.steps
    fig = Figure(figsize=(10, 5.2))
    bars, timeline = fig.subplots(2, 1, height_ratios=[3, 1.1])
    xs = list(range(len(steps)))
    loader = [st.dataloader_ms for st in steps]
    rest = [max(st.duration_ms - st.dataloader_ms, 0.0) for st in steps]
    bars.bar(xs, loader, color=_LOADER, width=0.8)
    bars.bar(xs, rest, bottom=loader, color=_COMPUTE, width=0.8)
    synced = [(x, st) for x, st in zip(xs, steps, strict=True) if st.syncs]
    if synced:
        bars.scatter(
            [x for x, _ in synced],
            [st.duration_ms for _, st in synced],
            marker="v",
            color=_SYNC,
            s=28,
            zorder=4,
        )
    if len(steps) <= 40:
        bars.set_xticks(xs)
        bars.set_xticklabels([str(st.step) for st in steps], fontsize=7)
    bars.set_xlabel("ProfilerStep#")
    bars.set_ylabel("ms")
    bars.set_title("Step time: data loader wait and the rest", fontsize=11, loc="left")
    bars.legend(
        handles=[
            Patch(color=_LOADER, label="data loader"),
            Patch(color=_COMPUTE, label="rest of step"),
            Line2D([], [], color=_SYNC, marker="v", ls="", label="step with host-device syncs"),
        ],
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )
    spans = [(st.start_ms, st.duration_ms) for st in steps]
    timeline.broken_barh(spans, (0.2, 0.6), facecolors=[_COMPUTE if i % 2 else "#72a0c8" for i in xs])
    timeline.broken_barh([(st.start_ms, st.dataloader_ms) for st in steps], (0.2, 0.25), facecolors=_LOADER)
    timeline.set_yticks([])
    timeline.set_xlabel("ms since the first step (white space: gaps between steps)")
    for ax in (bars, timeline):
        for side in ("top", "right"):
            ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


def roofline_svg(profile: ProfileSummary) -> Markup:
    """The roofline chart as inline SVG; empty when the profile has no peak figures to draw a roof."""
    fig = roofline_figure(profile)
    if fig is None:
        return Markup("")
    chart = figure_svg(fig, "roofline", ROOFLINE_LABEL)
    left_out = len(profile.top_ops) - len(_drawn(profile))
    if not left_out:
        return chart
    caption = Markup(
        '<p class="muted caption">{} of the top {} ops have no FLOPs or bytes (copies, collectives) '
        "and are not drawn.</p>"
    ).format(left_out, len(profile.top_ops))
    return chart + caption


def _drawn(profile: ProfileSummary) -> list[tuple[int, str, float, float]]:
    """(rank, bound, intensity, FLOP/s) of the top ops that have a place on log-log axes."""
    return [
        (op.rank, op.bound, op.operational_intensity, op.gflops_per_second * 1e9)
        for op in profile.top_ops
        if op.operational_intensity is not None and op.operational_intensity > 0 and op.gflops_per_second > 0
    ]


def label_groups(
    points: list[tuple[int, float, float]], decades: float = 0.08
) -> list[tuple[str, float, float]]:
    """One label per group of points that would print on top of each other (within `decades` on both
    log axes): '5, 6, 7' at the group's first point, instead of three labels in one spot."""
    groups: list[list[tuple[int, float, float]]] = []
    for point in sorted(points, key=lambda p: (p[1], p[2], p[0])):
        for group in groups:
            _, x0, y0 = group[0]
            if abs(math.log10(point[1] / x0)) < decades and abs(math.log10(point[2] / y0)) < decades:
                group.append(point)
                break
        else:
            groups.append([point])
    return [(", ".join(str(r) for r in sorted(p[0] for p in g)), g[0][1], g[0][2]) for g in groups]


def roofline_figure(profile: ProfileSummary) -> Figure | None:
    """Log-log intensity (FLOP/B) against FLOP/s: the roof min(peak, intensity x bandwidth), the ridge,
    each top op with FLOPs and bytes (numbered by rank, coloured by its bound) and the whole program.

    Ops without FLOPs or bytes (copies, collectives) have no place on log axes; the caption under the
    chart counts them. Ops that land on one spot share one label ('5, 6, 7').
    """
    peaks = profile.peaks
    if peaks is None or not peaks.teraflops_per_second or not peaks.hbm_gigabytes_per_second:
        return None
    peak = peaks.teraflops_per_second * 1e12
    bandwidth = peaks.hbm_gigabytes_per_second * 1e9
    ridge = peak / bandwidth
    drawn = _drawn(profile)
    program = profile.roofline
    xs = [ridge] + [x for _, _, x, _ in drawn]
    if program is not None and program.operational_intensity and program.gflops_per_second > 0:
        xs.append(program.operational_intensity)
    lo, hi = min(xs) / 10, max(xs) * 10
    grid = [lo * (hi / lo) ** (k / 200) for k in range(201)]
    fig = Figure(figsize=(10, 5.2))
    ax = fig.add_subplot()
    ax.loglog(grid, [min(peak, x * bandwidth) for x in grid], color=_ROOF, lw=2, label="roofline (per core)")
    ax.axvline(ridge, color=_ROOF, ls=":", lw=1)
    ax.annotate(
        f"ridge {ridge:.3g} FLOP/B", (ridge, peak), xytext=(4, -14), textcoords="offset points", fontsize=8
    )
    for bound, color in (("compute", _COMPUTE), ("memory", _MEMORY), ("unknown", "#9e9e9e")):
        mine = [(rank, x, y) for rank, b, x, y in drawn if b == bound]
        if not mine:
            continue
        ax.scatter(
            [x for _, x, _ in mine],
            [y for _, _, y in mine],
            color=color,
            s=36,
            zorder=3,
            label=f"{bound}-bound op",
        )
    for text, x, y in label_groups([(rank, x, y) for rank, _, x, y in drawn]):
        ax.annotate(text, (x, y), xytext=(5, 3), textcoords="offset points", fontsize=8)
    if program is not None and program.operational_intensity and program.gflops_per_second > 0:
        ax.scatter(
            [program.operational_intensity],
            [program.gflops_per_second * 1e9],
            marker="*",
            s=140,
            color=_PROGRAM,
            zorder=4,
            label="whole program",
        )
    ax.set_xlim(lo, hi)
    ax.set_xlabel("operational intensity (FLOP per HBM byte)")
    ax.set_ylabel("achieved FLOP/s per TensorCore")
    source = peaks.source.replace("_", " ")
    ax.set_title(
        f"Roofline: {profile.device_kind or 'TPU'}, {peaks.teraflops_per_second:.4g} TFLOP/s and "
        f"{peaks.hbm_gigabytes_per_second:.4g} GB/s per core (from the {source})",
        fontsize=11,
        loc="left",
    )
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    return fig


_COMPILED = page_template(TEMPLATE_NAME, {"bytes": fmt_bytes, "ms": facts.fmt_ms, "us": facts.fmt_us})


def _kb_labelled(citations: list[Citation]) -> list[Citation]:
    """Citations whose link text also names the knowledge-base fact id they stand on."""
    return [c.model_copy(update={"label": f"{c.label} [{c.kb}]"}) if c.kb else c for c in citations]


def _with_kb_ids(report: DiagnoseReport) -> DiagnoseReport:
    """A copy whose crash and finding citations name their `tpu-err:*` ids (the template prints labels)."""
    crashes = [c.model_copy(update={"citations": _kb_labelled(c.citations)}) for c in report.crashes]
    findings = [f.model_copy(update={"citations": _kb_labelled(f.citations)}) for f in report.findings]
    return report.model_copy(update={"crashes": crashes, "findings": findings})


def render_diagnose_html(report: DiagnoseReport) -> str:
    report = _with_kb_ids(report)
    crashes = [
        {"crash": c, "facts": facts.crash_fact_rows(c), "records": facts.crash_records(c)}
        for c in report.crashes
    ]
    traces = [{"trace": t, "chart": step_timeline_svg(t, i)} for i, t in enumerate(report.torch_traces)]
    top = report.top
    profile = report.profile
    comparison = report.comparison
    return _COMPILED.render(
        report=report,
        headline=facts.headline(report),
        crashes=crashes,
        traces=traces,
        top=top,
        profile=profile,
        profile_rows=profile_rows.profile_overview(profile) if profile is not None else [],
        profile_categories=profile_rows.category_rows(profile, top) if profile is not None else [],
        profile_ops=profile_rows.top_op_rows(profile, top) if profile is not None else [],
        profile_host=profile_rows.host_event_rows(profile, top) if profile is not None else [],
        roofline=roofline_svg(profile) if profile is not None else Markup(""),
        comparison=comparison,
        comparison_metrics=profile_rows.comparison_metric_rows(comparison) if comparison is not None else [],
        comparison_ops=profile_rows.comparison_op_rows(comparison, top) if comparison is not None else [],
    )
