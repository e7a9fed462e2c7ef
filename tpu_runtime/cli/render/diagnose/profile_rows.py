"""Pure data shaping of an XProf profile summary and a profile comparison for the diagnose renderers.

The terminal, Markdown and HTML renderers show the same rows in the same words: the overview (step time
and its split, device busy/idle, device time by class and the verdict, peaks, the whole program on the
roofline, MXU), where busy time goes by HLO category, the top ops with their roofline figures and
origin, and what changed against a baseline. Numbers keep four significant digits (`fmt_num`), FLOPs and
bytes take decimal SI prefixes (`fmt_si`), so a figure printed here can be read back and checked
against the summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tpu_runtime.diagnose.profile_model import ProfileComparison, ProfileSummary

__all__ = [
    "DASH",
    "ChangeRow",
    "OpRow",
    "category_rows",
    "comparison_metric_rows",
    "comparison_op_rows",
    "fmt_num",
    "fmt_pct",
    "fmt_si",
    "host_event_rows",
    "profile_overview",
    "top_op_rows",
]

DASH = "—"
_SI = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
VERDICT_WORDS = {
    "compute_bound": "compute-bound",
    "hbm_bound": "HBM-bound",
    "collective_bound": "collective-bound",
    "transfer_bound": "host-transfer-bound",
    "host_bound": "host-bound (device idle)",
    "unknown": "unknown",
}

#: What an op's time counts as, in a few words (the classes of the device-time breakdown).
TIME_CLASS_SHORT = {
    "compute": "compute",
    "hbm": "HBM-bound",
    "collectives": "collective",
    "host_transfers": "host transfer",
    "idle": "idle",
    "other": "no roofline verdict",
}


def fmt_num(value: float | None, digits: int = 4) -> str:
    """`digits` significant digits with thousands separators, trailing zeros dropped; '—' for None."""
    if value is None or not math.isfinite(value):
        return DASH
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude < -4 or magnitude >= 15:
        return f"{value:.{digits - 1}e}"
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


def fmt_si(value: float | None, unit: str) -> str:
    """A count with a decimal SI prefix and four significant digits: '1.342 GFLOP', '10.74 GB'."""
    if value is None:
        return DASH
    if value == 0:
        return "0"
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{fmt_num(value / scale)} {prefix}{unit}"
    return f"{fmt_num(value)} {unit}"


def fmt_pct(value: float | None) -> str:
    return DASH if value is None else f"{fmt_num(value, 3)}%"


def profile_overview(p: ProfileSummary) -> list[tuple[str, str]]:
    """(label, value) rows: what ran, step time and its split, busy/idle, verdict, peaks, roofline, MXU."""
    rows: list[tuple[str, str]] = []
    if p.is_tpu:
        rows.append(
            (
                "device",
                f"{p.device_kind or 'unknown TPU'}: {p.device_count} TensorCore(s) on {p.chip_count} chip(s)",
            )
        )
    else:
        rows.append(("device", "no TPU device planes (host-side summary only)"))
    if p.hosts:
        rows.append(("hosts", f"{', '.join(p.hosts)} ({len(p.files)} file(s), {fmt_si(p.bytes, 'B')})"))
    if p.profile_duration_ms is not None:
        rows.append(("profile length", f"{fmt_num(p.profile_duration_ms)} ms"))
    if p.steps is not None:
        s = p.steps
        rows.append(
            (
                "step time",
                f"mean {fmt_num(s.mean_ms)} ms (min {fmt_num(s.min_ms)}, max {fmt_num(s.max_ms)}, "
                f"stdev {fmt_num(s.stdev_ms)}) over {s.count} steps"
                + (f" ({s.windows} windows on all cores)" if s.windows > s.count else "")
                + f"; steps: {s.source}",
            )
        )
        rows.append(
            (
                "step breakdown",
                f"device busy {fmt_num(s.compute_ms)} ms, idle {fmt_num(s.idle_ms)} ms "
                f"({fmt_pct(s.idle_percent)} of the step)",
            )
        )
    if p.device_time is not None:
        d = p.device_time
        rows.append(
            (
                "device busy / idle",
                f"busy {fmt_pct(d.busy_percent)} ({fmt_num(d.busy_ms)} ms), idle {fmt_pct(d.idle_percent)} "
                f"({fmt_num(d.idle_ms)} ms), summed over {d.chips} chip(s)",
            )
        )
    if p.is_tpu:
        rows.append(("verdict", f"{VERDICT_WORDS[p.bound_by]}: {p.bound_reason}"))
    if p.time_breakdown:
        rows.append(
            (
                "device time by class",
                ", ".join(f"{t.label} {fmt_pct(t.percent)} ({fmt_num(t.ms)} ms)" for t in p.time_breakdown),
            )
        )
    if p.peaks is not None and p.peaks.source != "none":
        k = p.peaks
        rows.append(
            (
                "peaks per core",
                f"{fmt_num(k.teraflops_per_second)} TFLOP/s, {fmt_num(k.hbm_gigabytes_per_second)} GB/s HBM, "
                f"ridge {fmt_num(k.ridge_flops_per_byte)} FLOP/B (from the "
                f"{k.source.replace('_', ' ')})",
            )
        )
    if p.roofline is not None:
        r = p.roofline
        rows.append(
            (
                "program roofline",
                f"{fmt_num(r.gflops_per_second)} GFLOP/s, {fmt_num(r.gigabytes_per_second)} GB/s per core, "
                f"intensity {fmt_num(r.operational_intensity)} FLOP/B: {r.bound}-bound; "
                f"{fmt_pct(r.flops_utilization_percent)} of peak FLOP/s, "
                f"{fmt_pct(r.hbm_utilization_percent)} of peak HBM bandwidth",
            )
        )
    if p.is_tpu:
        mxu = p.mxu_utilization_percent
        rows.append(("MXU utilisation", fmt_pct(mxu) if mxu is not None else "not in this profile"))
    if p.is_tpu:
        rows.append(("distinct ops", str(p.distinct_ops)))
    return rows


def category_rows(p: ProfileSummary, top: int) -> list[tuple[str, str, str]]:
    """(HLO category, self time ms, percent of busy time), busiest first."""
    return [(c.category, fmt_num(c.self_time_ms), fmt_pct(c.percent_of_busy)) for c in p.categories[:top]]


@dataclass(frozen=True)
class OpRow:
    """One top op, every figure already formatted (per-run FLOPs and bytes; rates over self time)."""

    rank: str
    name: str
    program: str
    category: str
    self_ms: str
    percent: str
    avg_us: str
    flops: str
    bytes: str
    intensity: str
    gflops: str
    gbps: str
    bound: str
    framework_op: str
    source: str
    time_class: str = ""


def top_op_rows(p: ProfileSummary, top: int) -> list[OpRow]:
    return [
        OpRow(
            rank=str(op.rank),
            name=f"{op.paired_with} + {op.name}" if op.paired_with else op.name,
            program=op.program,
            category=op.category,
            self_ms=fmt_num(op.self_time_ms),
            percent=fmt_pct(op.percent_of_device_time),
            avg_us=fmt_num(op.avg_self_time_us),
            flops=fmt_si(op.flops, "FLOP"),
            bytes=fmt_si(op.bytes_accessed, "B"),
            intensity=fmt_num(op.operational_intensity),
            gflops=fmt_num(op.gflops_per_second),
            gbps=fmt_num(op.gigabytes_per_second),
            bound=op.bound,
            framework_op=op.framework_op or DASH,
            source=op.source or DASH,
            time_class=TIME_CLASS_SHORT[op.time_class],
        )
        for op in p.top_ops[:top]
    ]


def host_event_rows(p: ProfileSummary, top: int) -> list[tuple[str, str, str]]:
    """(event, self time ms, count) of the host threads, for profiles without TPU planes."""
    if p.host is None:
        return []
    return [(e.name, fmt_num(e.self_time_ms), str(e.count)) for e in p.host.top_events[:top]]


@dataclass(frozen=True)
class ChangeRow:
    label: str
    before: str
    after: str
    change: str
    status: str = ""
    program: str = ""


def _change(pct: float | None) -> str:
    return DASH if pct is None else f"{pct:+.1f}%"


def comparison_metric_rows(c: ProfileComparison) -> list[ChangeRow]:
    return [
        ChangeRow(m.name, fmt_num(m.before), fmt_num(m.after), _change(m.change_percent)) for m in c.metrics
    ]


def comparison_op_rows(c: ProfileComparison, top: int) -> list[ChangeRow]:
    """Ops of both top lists, slower first: average self time per run (µs) before and after."""
    return [
        ChangeRow(
            o.name,
            fmt_num(o.before_avg_us),
            fmt_num(o.after_avg_us),
            _change(o.change_percent),
            status=o.status,
            program=o.program,
        )
        for o in c.ops[: max(top, 1) * 2]
    ]
