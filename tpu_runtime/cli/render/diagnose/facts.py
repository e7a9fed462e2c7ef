"""Pure data shaping shared by the DiagnoseReport renderers (terminal, Markdown, HTML).

Nothing here formats for a medium: these functions pick, order and word the facts of a crash and the
headline, so the three renderers show the same things (a profile's rows: `profile_rows`).
"""

from __future__ import annotations

from typing import Any

from tpu_runtime.cli.render.diagnose.profile_rows import VERDICT_WORDS
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.diagnose.report import CrashDiagnosis, DiagnoseReport, StallStat

__all__ = [
    "crash_fact_rows",
    "crash_records",
    "fmt_ms",
    "fmt_us",
    "headline",
    "loader_waits",
]

# Facts shown first, in this order; the source line is one row built from its four facts.
_FIRST = ("tpu_generation", "exception", "status", "xla_error_code", "frameworks")
_HIDDEN = {"source_file", "source_line", "source_function", "source_code", "message", "dims", "log_cut_short"}


def fmt_us(us: float) -> str:
    """Microseconds in the unit that reads best."""
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} µs"


def fmt_ms(ms: float | None) -> str:
    return "—" if ms is None else fmt_us(ms * 1e3)


def loader_waits(stat: StallStat) -> str:
    """The data loader's waits in a trace, worded alike by each renderer (which adds the step share)."""
    return f"{stat.count} waits, {fmt_ms(stat.total_ms)} total, max {fmt_ms(stat.max_ms)}"


def fmt_fact(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int):
        return f"{fmt_bytes(value)} ({value:,} B)"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if isinstance(value, list) and all(not isinstance(v, dict) for v in value):
        return ", ".join(str(v) for v in value)
    return str(value)


def source_line(facts: dict[str, Any]) -> str | None:
    if "source_file" not in facts:
        return None
    where = f"{facts['source_file']}:{facts.get('source_line', '?')}"
    if facts.get("source_function"):
        where += f" in {facts['source_function']}"
    return where


def crash_fact_rows(crash: CrashDiagnosis) -> list[tuple[str, str]]:
    """(label, value) rows: the user's source line first, then the key facts, then the rest by name."""
    facts = crash.facts
    rows: list[tuple[str, str]] = []
    where = source_line(facts)
    if where:
        rows.append(("source", where))
    if facts.get("source_code"):
        rows.append(("code", str(facts["source_code"])))
    keys = [k for k in _FIRST if k in facts]
    keys += sorted(k for k in facts if k not in _FIRST and k not in _HIDDEN and not _is_records(facts[k]))
    rows.extend((k, fmt_fact(k, facts[k])) for k in keys)
    if facts.get("log_cut_short"):
        rows.append(("log", "cut short: the traceback has no final exception line"))
    return rows


_COMPACT = ("rank", "size", "shape", "source", "op_name")


def crash_records(crash: CrashDiagnosis, compact: bool = False) -> list[tuple[str, list[dict[str, str]]]]:
    """Facts that are lists of records (e.g. largest_allocations), each record as printable strings.

    Sizes print in binary units, `source_file`/`source_line` as one `source`; `compact` keeps only the
    columns that fit a terminal.
    """
    out: list[tuple[str, list[dict[str, str]]]] = []
    for key, value in crash.facts.items():
        if not _is_records(value):
            continue
        rows: list[dict[str, str]] = []
        for rec in value:
            row: dict[str, str] = {}
            for k, v in rec.items():
                if k in ("dims", "dtype", "source_line"):
                    continue
                if k == "source_file":
                    row["source"] = f"{v}:{rec.get('source_line', '?')}"
                elif k.endswith("_bytes") and isinstance(v, int):
                    row[k.removesuffix("_bytes")] = fmt_bytes(v)
                else:
                    row[k] = str(v)
            rows.append({k: v for k, v in row.items() if k in _COMPACT} if compact else row)
        out.append((key, rows))
    return out


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def headline(report: DiagnoseReport) -> str:
    """One line naming what was found, for the top of every rendering."""
    parts: list[str] = []
    for crash in report.crashes:
        parts.append(f"{crash.category}" + (f": {crash.summary}" if crash.summary else ""))
    for trace in report.torch_traces:
        high = [f.kind for f in trace.findings if f.severity in ("high", "medium")]
        parts.append("torch trace: " + (", ".join(high) if high else "no issue flagged"))
    for dump in report.xla_dumps:
        parts.append(f"XLA dump: {dump.module_count} modules, {len(dump.recompilations)} recompiled")
    for metrics in report.metrics:
        parts.append("metrics: " + (", ".join(f.kind for f in metrics.findings) or "no issue flagged"))
    if report.profile is not None:
        p = report.profile
        parts.append(f"profile: {VERDICT_WORDS[p.bound_by]}" if p.is_tpu else "profile: no TPU planes")
    if report.comparison is not None:
        parts.append(f"compared with baseline: {report.comparison.summary}")
    return "; ".join(parts) or "nothing to report"
