"""Pure data shaping shared by the OnboardReport renderers (terminal, Markdown, HTML).

Nothing here formats for a particular medium: the functions pick, order and count what each front end
shows, so the three renderers agree on which layer is "worst", which ops are missing and how many
bytes a generation needs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the report models load with the onboard renderers, not with `fmt_bytes` for diagnose
    from tpu_runtime.onboard.report import (
        GenerationFit,
        LayerError,
        NumericsReport,
        OnboardReport,
        OpUse,
        Preflight,
        Remedy,
        SizePlan,
    )

__all__ = [
    "STATUSES",
    "STATUS_LABELS",
    "CoverageRow",
    "LayerTable",
    "MissingRow",
    "ModeSummary",
    "coverage_rows",
    "fmt_count",
    "fmt_rel",
    "generation_fits",
    "layer_table",
    "missing_rows",
    "mode_summaries",
    "ops_by_severity",
    "reason_from_notes",
    "remedies_by_op",
    "why_absent",
]

STATUSES: tuple[str, ...] = ("supported", "composite", "cpu_variant", "missing")
STATUS_LABELS: dict[str, str] = {
    "supported": "supported",
    "composite": "composite",
    "cpu_variant": "CPU variant",
    "missing": "missing",
}
_SEVERITY = {"missing": 0, "cpu_variant": 1, "composite": 2, "supported": 3}


# --------------------------------------------------------------------------------------------- numbers


def fmt_count(n: int) -> str:
    """Parameter counts the way model cards quote them: 124.4M, 6.74B."""
    for suffix, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{suffix}"
    return str(n)


def fmt_rel(x: float) -> str:
    """A relative error: `inf` for a mode that did not run, `nan` for one that produced NaNs."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf"
    if x == 0:
        return "0"
    return f"{x:.2e}"


def _rel_key(x: float) -> float:
    """Sort key that puts non-finite errors (did not run, NaN) above every finite one."""
    return math.inf if math.isnan(x) else x


# ------------------------------------------------------------------------------------------------ size


def size_rows(size: SizePlan) -> list[tuple[str, str]]:
    """How the model was run at a size this machine holds, as (label, text) rows for the header."""
    built = size.full_size
    if size.full_size == "fake tensors":
        built = "fake tensors at full size (shapes and dtypes only: nothing allocated)"
    rows = [("built on", built)]
    if size.input_shapes:
        rows.append(("inputs", ", ".join(size.input_shapes)))
    if size.capture:
        rows.append(("ops from", size.capture))
    if size.numerics_model:
        rows.append(("numerics on", size.numerics_model))
    return rows


# ------------------------------------------------------------------------------------------------ notes


def reason_from_notes(notes: Sequence[str], keywords: Iterable[str]) -> str:
    """The notes that explain why a section is absent, or a plain statement that none did."""
    keys = [k.lower() for k in keywords]
    hits = [n for n in notes if any(k in n.lower() for k in keys)]
    # the renderers print "<section> not run: " themselves; a note that starts the same way says it once
    reasons = [n.split(" not run: ", 1)[1] if " not run: " in n[:40] else n for n in hits]
    return "; ".join(reasons) if reasons else "no reason recorded in the report notes"


SECTION_KEYWORDS: dict[str, tuple[str, ...]] = {
    "numerics": ("numeric",),
    "preflight": ("preflight", "hbm"),
    "serving": ("serving", "vllm"),
}
"""Words of the notes that explain an absent section; one table, so the three renderers say the same."""


def why_absent(report: OnboardReport, section: str) -> str:
    """Why the report has no `section` (numerics, preflight, serving), from its notes."""
    return reason_from_notes(report.notes, SECTION_KEYWORDS[section])


# ------------------------------------------------------------------------------------------------- ops


@dataclass(frozen=True)
class CoverageRow:
    """Distinct ops and total calls per status for one phase (or for the TorchTPU trace)."""

    label: str
    ops: dict[str, int]
    calls: dict[str, int]

    @property
    def total_ops(self) -> int:
        return sum(self.ops.values())

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


def _coverage(label: str, ops: Iterable[OpUse]) -> CoverageRow:
    n_ops: Counter[str] = Counter()
    n_calls: Counter[str] = Counter()
    for use in ops:
        n_ops[use.status] += 1
        n_calls[use.status] += use.count
    return CoverageRow(label, {s: n_ops[s] for s in STATUSES}, {s: n_calls[s] for s in STATUSES})


def coverage_rows(report: OnboardReport) -> list[CoverageRow]:
    """forward and backward of the CPU capture, plus the fake-TPU trace when there is one."""
    rows = [
        _coverage(phase, (u for u in report.ops if u.phase == phase))
        for phase in ("forward", "backward")
        if any(u.phase == phase for u in report.ops)
    ]
    if report.tpu_ops:
        rows.append(_coverage("forward (TorchTPU trace)", report.tpu_ops))
    return rows


def ops_by_severity(ops: Iterable[OpUse]) -> list[OpUse]:
    """missing first, then CPU variants, composites, supported; most-called first within a status."""
    return sorted(ops, key=lambda u: (_SEVERITY.get(u.status, 4), u.phase != "forward", -u.count, u.op))


def remedies_by_op(remedies: Iterable[Remedy]) -> dict[str, list[Remedy]]:
    out: dict[str, list[Remedy]] = {}
    for r in remedies:
        out.setdefault(r.op, []).append(r)
    return out


@dataclass(frozen=True)
class MissingRow:
    op: str
    phase: str
    count: int | None
    module: str
    source: str
    detail: str
    remedies: list[Remedy]

    @property
    def first_remedy(self) -> Remedy | None:
        return self.remedies[0] if self.remedies else None


def missing_rows(report: OnboardReport) -> list[MissingRow]:
    """Every missing op once per phase it ran in, plus names in `report.missing` no OpUse carries."""
    fixes = remedies_by_op(report.remedies)
    rows: list[MissingRow] = []
    seen: set[str] = set()
    for use in ops_by_severity(u for u in [*report.ops, *report.tpu_ops] if u.status == "missing"):
        key = f"{use.op}\0{use.phase}"
        if key in seen:
            continue
        seen.add(key)
        seen.add(use.op)
        rows.append(
            MissingRow(
                use.op, use.phase, use.count, use.module, use.source, use.detail, fixes.get(use.op, [])
            )
        )
    for name in report.missing:
        if name not in seen:
            seen.add(name)
            rows.append(MissingRow(name, "—", None, "", "", "", fixes.get(name, [])))
    return rows


# -------------------------------------------------------------------------------------------- numerics


@dataclass(frozen=True)
class ModeSummary:
    mode: str
    tolerance: float | None
    worst: LayerError | None
    failing: int
    layers: int
    first_divergent: str | None


class LayerTable:
    """The numerics rows indexed by layer (execution order) and mode, built once per report."""

    def __init__(self, numerics: NumericsReport) -> None:
        self.modes: list[str] = list(numerics.modes) or sorted({r.mode for r in numerics.rows})
        for r in numerics.rows:
            if r.mode not in self.modes:
                self.modes.append(r.mode)
        self.layers: list[str] = []
        self.cells: dict[tuple[str, str], LayerError] = {}
        index: dict[str, int] = {}
        for r in numerics.rows:
            if r.layer not in index:
                index[r.layer] = len(self.layers)
                self.layers.append(r.layer)
            self.cells.setdefault((r.layer, r.mode), r)
        self.index = index
        self.numerics = numerics

    def get(self, layer: str, mode: str) -> LayerError | None:
        return self.cells.get((layer, mode))

    def first_divergent(self, mode: str) -> str | None:
        by_mode = self.numerics.first_divergent_by_mode
        if mode in by_mode:
            return by_mode[mode]
        if mode == "default" and self.numerics.first_divergent_layer is not None:
            return self.numerics.first_divergent_layer
        for layer in self.layers:
            cell = self.get(layer, mode)
            if cell is not None and not cell.ok:
                return layer
        return None

    @property
    def focus(self) -> str | None:
        """The layer to look at first: DEFAULT's first divergent one, else the earliest in any mode."""
        if self.numerics.first_divergent_layer is not None:
            return self.numerics.first_divergent_layer
        firsts = [
            f for f in (self.first_divergent(m) for m in self.modes) if f is not None and f in self.index
        ]
        return min(firsts, key=self.index.__getitem__) if firsts else None

    def neighbourhood(self, layer: str, radius: int = 2) -> list[str]:
        i = self.index.get(layer)
        if i is None:
            return []
        return self.layers[max(0, i - radius) : i + radius + 1]

    def worst_layers(self, n: int) -> list[str]:
        """Layers ranked by their worst error relative to the mode's tolerance."""

        def score(layer: str) -> float:
            best = 0.0
            for m in self.modes:
                cell = self.get(layer, m)
                if cell is None:
                    continue
                ratio = _rel_key(cell.rel) / cell.tolerance if cell.tolerance > 0 else _rel_key(cell.rel)
                best = max(best, ratio)
            return best

        return sorted(self.layers, key=lambda name: (-score(name), self.index[name]))[: max(n, 0)]

    def highlight(self, top: int) -> tuple[str | None, list[str]]:
        """(focus, layers) for the small table: the focus layer's neighbourhood, else (None, worst layers)."""
        focus = self.focus
        if focus is not None:
            return focus, self.neighbourhood(focus)
        return None, self.worst_layers(top)


def layer_table(numerics: NumericsReport | None) -> LayerTable | None:
    if numerics is None or not numerics.rows:
        return None
    return LayerTable(numerics)


def mode_summaries(table: LayerTable) -> list[ModeSummary]:
    out: list[ModeSummary] = []
    for mode in table.modes:
        cells = [c for c in (table.get(layer, mode) for layer in table.layers) if c is not None]
        worst = max(cells, key=lambda c: _rel_key(c.rel)) if cells else None
        out.append(
            ModeSummary(
                mode=mode,
                tolerance=cells[0].tolerance if cells else None,
                worst=worst,
                failing=sum(not c.ok for c in cells),
                layers=len(cells),
                first_divergent=table.first_divergent(mode),
            )
        )
    return out


# ------------------------------------------------------------------------------------------- preflight


def generation_fits(preflight: Preflight | None) -> list[GenerationFit]:
    """The generations in the canonical order (v5e, v5p, v6e, tpu7x), then any others by name."""
    from tpu_runtime.onboard.report import GENERATIONS

    if preflight is None:
        return []
    known = [preflight.generations[g] for g in GENERATIONS if g in preflight.generations]
    extra = [fit for key, fit in sorted(preflight.generations.items()) if key not in GENERATIONS]
    return known + extra
