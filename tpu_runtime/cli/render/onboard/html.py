"""OnboardReport as one self-contained HTML page: inline CSS, inline SVG charts, no scripts, no URLs.

Charts are drawn with matplotlib's object API (`matplotlib.figure.Figure`, no pyplot, so the caller's
backend and global figure list are left alone) and written by its SVG backend into a string. Each SVG's
element ids are prefixed with the chart's name so three charts can share one document, and the id salt
is fixed so the same report renders to the same bytes. All report text goes through jinja2 with
autoescaping; matplotlib escapes the text it writes into SVG itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from tpu_runtime.cli.render.html_page import page_template
from tpu_runtime.cli.render.onboard import shaping
from tpu_runtime.cli.render.svg import figure_svg, mpl_text
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.onboard.report import GenerationFit, OnboardReport, Remedy

__all__ = ["render_onboard_html"]

STATUS_COLORS = {
    "supported": "#2e7d32",
    "composite": "#1565c0",
    "cpu_variant": "#ef6c00",
    "missing": "#c62828",
}
MODE_COLORS = {"default": "#1f77b4", "high": "#2ca02c", "highest": "#9467bd", "bf16": "#d62728"}
_FALLBACK_COLORS = ("#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
_GIB = 2.0**30
TEMPLATE_NAME = "onboard.html.j2"
"""The page template, in `tpu_runtime/cli/render/templates/` (`html_page.page_template`)."""

# ------------------------------------------------------------------------------------------------ charts


def _mode_color(mode: str, i: int) -> str:
    return MODE_COLORS.get(mode, _FALLBACK_COLORS[i % len(_FALLBACK_COLORS)])


def _layer_chart(table: shaping.LayerTable) -> Markup:
    n = len(table.layers)
    finite = [
        c.rel
        for c in table.cells.values()
        if math.isfinite(c.rel) and c.rel > 0  # zero cannot sit on a log axis
    ]
    tolerances = [c.tolerance for c in table.cells.values() if c.tolerance > 0]
    low = min(finite + tolerances, default=1e-6)
    high = max(finite + tolerances, default=1.0)
    floor, ceil = low / 10, high * 10
    fig = Figure(figsize=(10, 4.4))
    ax = fig.add_subplot()
    xs = list(range(n))
    markers = n <= 60
    for i, mode in enumerate(table.modes):
        color = _mode_color(mode, i)
        ys: list[float] = []
        bad: list[int] = []
        tol: list[float] = []
        for x, layer in enumerate(table.layers):
            c = table.get(layer, mode)
            if c is None:
                ys.append(math.nan)
                tol.append(math.nan)
                continue
            tol.append(c.tolerance)
            if not math.isfinite(c.rel):
                ys.append(ceil)
                bad.append(x)
            else:
                ys.append(max(c.rel, floor))
        ax.plot(xs, ys, color=color, lw=1.4, marker="o" if markers else None, ms=3, label=mode)
        if bad:
            ax.scatter(bad, [ceil] * len(bad), marker="^", color=color, s=40, zorder=4)
        if len({t for t in tol if not math.isnan(t)}) <= 1:
            t0 = next((t for t in tol if not math.isnan(t)), None)
            if t0 is not None and t0 > 0:
                ax.axhline(t0, color=color, ls="--", lw=0.9, alpha=0.8)
        else:
            ax.plot(xs, tol, color=color, ls="--", lw=0.9, alpha=0.8, drawstyle="steps-mid")
        first = table.first_divergent(mode)
        if first is not None and first in table.index:
            fx = table.index[first]
            ax.scatter([fx], [ys[fx]], s=110, facecolors="none", edgecolors=color, linewidths=1.8, zorder=5)
    focus = table.focus
    if focus is not None:
        fx = table.index[focus]
        ax.axvline(fx, color="#c62828", ls=":", lw=1.2)
        ax.annotate(
            f"first divergent: {mpl_text(focus, 48)}",
            xy=(fx, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(4, -12),
            textcoords="offset points",
            color="#c62828",
            fontsize=8,
            ha="left" if fx < n * 0.6 else "right",
        )
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, ceil * 2)
    ax.set_ylabel("max |err| / max |ref|")
    if n <= 40:
        ax.set_xticks(xs)
        ax.set_xticklabels(
            [mpl_text(layer, 32) for layer in table.layers], rotation=60, ha="right", fontsize=7
        )
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=12))
        ax.set_xlabel("layer index (execution order)")
    ax.set_xlim(-0.5, max(n - 0.5, 0.5))
    ax.grid(True, which="major", axis="y", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], color="#555", ls="--", lw=0.9),
        Line2D([], [], color="#555", marker="o", ms=9, mfc="none", ls=""),
    ]
    labels += ["tolerance (per mode)", "first divergent (per mode)"]
    if any(not math.isfinite(c.rel) for c in table.cells.values()):
        handles.append(Line2D([], [], color="#555", marker="^", ls=""))
        labels.append("did not run / non-finite")
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Per-layer relative error vs float64 CPU reference", fontsize=11, loc="left")
    return figure_svg(fig, "layers", "per-layer relative error by precision mode")


def _coverage_chart(rows: Sequence[shaping.CoverageRow]) -> Markup:
    fig = Figure(figsize=(10, 0.9 + 0.65 * len(rows)))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]
    left = [0.0] * len(rows)
    total_max = max((r.total_ops for r in rows), default=1) or 1
    for status in shaping.STATUSES:
        widths = [float(r.ops[status]) for r in rows]
        ax.barh(
            ys,
            widths,
            left=left,
            color=STATUS_COLORS[status],
            label=shaping.STATUS_LABELS[status],
            height=0.6,
            edgecolor="white",
        )
        for y, lft, w in zip(ys, left, widths, strict=True):
            if w > 0 and w / total_max > 0.035:
                ax.text(lft + w / 2, y, str(int(w)), ha="center", va="center", color="white", fontsize=8)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(ys)
    ax.set_yticklabels([mpl_text(r.label) for r in rows])
    ax.set_xlabel("distinct ATen overloads")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("Op coverage by TorchTPU status", fontsize=11, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return figure_svg(fig, "coverage", "op counts by TorchTPU status for each phase")


def _hbm_chart(fits: Sequence[GenerationFit]) -> Markup:
    fig = Figure(figsize=(10, 4.0))
    ax = fig.add_subplot()
    xs = list(range(len(fits)))
    inf = [f.inference_bytes / _GIB for f in fits]
    train = [f.training_bytes / _GIB for f in fits]
    hbm = [f.hbm_per_chip_bytes / _GIB for f in fits]
    w = 0.36
    # Bars that do not fit on one chip are hatched (set per patch: `bar(hatch=[...])` needs mpl 3.10);
    # the tick label says how many chips each needs.
    for offset, values, color, fit_flags in (
        (-w / 2, inf, "#4c78a8", [f.fits for f in fits]),
        (w / 2, train, "#f58518", [f.training_fits for f in fits]),
    ):
        bars = ax.bar([x + offset for x in xs], values, w, color=color, edgecolor="white")
        for patch, fits_one in zip(bars.patches, fit_flags, strict=True):
            if not fits_one:
                patch.set_hatch("///")
    ax.hlines(hbm, [x - 0.45 for x in xs], [x + 0.45 for x in xs], color="#222", lw=2.2, label="HBM per chip")
    positive = [v for v in inf + train + hbm if v > 0]
    if positive and max(positive) / min(positive) > 30:
        ax.set_yscale("log")
    ax.set_xticks(xs)
    ax.set_xticklabels(
        [f"{mpl_text(f.generation)}\nchips: {f.inference_chips} inf / {f.training_chips} train" for f in fits]
    )
    ax.set_ylabel("GiB")
    ax.margins(y=0.12)
    handles = [
        Patch(facecolor="#4c78a8", label="inference"),
        Patch(facecolor="#f58518", label="training"),
        Line2D([], [], color="#222", lw=2.2, label="HBM per chip"),
        Patch(facecolor="#999", edgecolor="white", hatch="///", label="does not fit one chip"),
    ]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title("HBM needed vs HBM per chip", fontsize=11, loc="left")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return figure_svg(fig, "hbm", "inference and training bytes against HBM per chip for each TPU generation")


# ---------------------------------------------------------------------------------------------- template


_COMPILED = page_template(
    TEMPLATE_NAME, {"gib": fmt_bytes, "rel": shaping.fmt_rel, "count": shaping.fmt_count}
)


def render_onboard_html(report: OnboardReport) -> str:
    """One self-contained HTML page: the Markdown report's tables plus three inline SVG charts."""
    coverage = shaping.coverage_rows(report)
    missing = shaping.missing_rows(report)
    remedy_groups: dict[str, list[Remedy]] = {}
    for row in missing:
        if row.remedies:
            remedy_groups.setdefault(row.op, row.remedies)
    numerics = report.numerics
    layers = shaping.layer_table(numerics)
    fits = shaping.generation_fits(report.preflight)
    focus, highlight = layers.highlight(15) if layers is not None else (None, [])
    context = {
        "report": report,
        "m": report.model,
        "statuses": shaping.STATUSES,
        "labels": shaping.STATUS_LABELS,
        "coverage": coverage,
        "coverage_svg": _coverage_chart(coverage) if coverage else Markup(""),
        "missing": missing,
        "remedy_groups": remedy_groups,
        "numerics": numerics,
        "numerics_reason": shaping.why_absent(report, "numerics"),
        "layers": layers,
        "layers_svg": _layer_chart(layers) if layers is not None else Markup(""),
        "summaries": shaping.mode_summaries(layers) if layers is not None else [],
        "focus": focus,
        "highlight": highlight,
        "preflight": report.preflight,
        "preflight_reason": shaping.why_absent(report, "preflight"),
        "fits": fits,
        "show_xla": any(f.xla_bytes is not None for f in fits),
        "hbm_svg": _hbm_chart(fits) if fits else Markup(""),
        "serving": report.serving,
        "serving_reason": shaping.why_absent(report, "serving"),
        "inventory": shaping.ops_by_severity(report.ops),
        "size_rows": shaping.size_rows(report.size) if report.size is not None else [],
    }
    return _COMPILED.render(**context)
