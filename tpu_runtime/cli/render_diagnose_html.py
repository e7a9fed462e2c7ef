"""DiagnoseReport as one self-contained HTML page: inline CSS, inline SVG charts, no scripts, no URLs loaded.

For each torch.profiler trace with ProfilerStep#N events it draws a step timeline: each step's duration
split into data-loader wait and the rest, with the host-device syncs marked, above a time axis that shows
the gaps between steps. Charts come from matplotlib's object API through the onboarding renderer's SVG
helper (ids prefixed per chart, fixed hash salt), and all report text goes through jinja2 autoescaping.
"""

from __future__ import annotations

from importlib import resources

import jinja2
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tpu_runtime.cli.render_common import fmt_bytes
from tpu_runtime.cli.render_diagnose_common import (
    crash_fact_rows,
    crash_records,
    fmt_ms,
    fmt_us,
    headline,
    profile_notes,
    profile_rows,
    profile_top_ops,
)
from tpu_runtime.cli.render_html import _svg
from tpu_runtime.diagnose.report import DiagnoseReport, TorchTraceSummary

__all__ = ["render_diagnose_html", "step_timeline_figure", "step_timeline_svg"]

TEMPLATE_NAME = "diagnose.html.j2"
_COMPUTE, _LOADER, _SYNC = "#4c78a8", "#f58518", "#c62828"


def step_timeline_svg(trace: TorchTraceSummary, index: int = 0) -> Markup:
    """The step timeline as inline SVG; empty when the trace has no ProfilerStep#N events."""
    if not trace.steps:
        return Markup("")
    fig = step_timeline_figure(trace)
    return _svg(fig, f"steps{index}", "step durations with data loader time, and the steps on a time axis")


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


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    env.filters["bytes"] = fmt_bytes
    env.filters["ms"] = fmt_ms
    env.filters["us"] = fmt_us
    return env


_ENV = _environment()
_COMPILED = _ENV.from_string(
    resources.files("tpu_runtime.cli").joinpath("templates", TEMPLATE_NAME).read_text(encoding="utf-8")
)


def render_diagnose_html(report: DiagnoseReport) -> str:
    crashes = [{"crash": c, "facts": crash_fact_rows(c), "records": crash_records(c)} for c in report.crashes]
    traces = [{"trace": t, "chart": step_timeline_svg(t, i)} for i, t in enumerate(report.torch_traces)]
    profile = report.profile
    columns, rows = profile_top_ops(profile, report.top) if profile is not None else ([], [])
    return _COMPILED.render(
        report=report,
        headline=headline(report),
        crashes=crashes,
        traces=traces,
        top=report.top,
        profile=profile,
        profile_rows=profile_rows(profile) if profile is not None else [],
        profile_columns=columns,
        profile_ops=rows,
        profile_notes=list(profile_notes(profile)) if profile is not None else [],
    )
