"""DiagnoseReport as a compact rich summary for the terminal.

Everything that came from the user's files (log lines, op names, paths) goes in as `rich.text.Text`,
never as markup, so a `[bold]` inside a log prints as typed.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tpu_runtime.cli.render.diagnose import facts, profile_rows
from tpu_runtime.cli.render.terminal_text import plain, section_table
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.diagnose.profile_model import ProfileComparison, ProfileSummary
from tpu_runtime.diagnose.report import (
    CrashDiagnosis,
    DiagnoseReport,
    Finding,
    MetricsSummary,
    TorchTraceSummary,
    XlaDumpSummary,
)

__all__ = ["render_diagnose_terminal"]

_SEVERITY = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


#: Console columns from which the op table also shows FLOPs and bytes per run.
WIDE_CONSOLE = 100


def _kv(rows: list[tuple[str, str]]) -> Table:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for key, value in rows:
        grid.add_row(plain(key), plain(value))
    return grid


def render_diagnose_terminal(report: DiagnoseReport, console: Console, top: int = 15) -> None:
    console.print(Text.assemble(("diagnose: ", "bold"), facts.headline(report)))
    inputs = section_table()
    inputs.add_column("input")
    inputs.add_column("kind")
    inputs.add_column("recognised as")
    for item in report.inputs:
        inputs.add_row(plain(item.path), plain(item.kind, "cyan"), plain(item.detail, "dim"))
    console.print(inputs)
    first = [f for f in report.findings if f.severity in ("high", "medium")][:top]
    if first:
        console.print(Text("what to change first:", style="bold"))
        for f in first:
            console.print(
                Text.assemble(
                    (f"  [{f.severity}] ", _SEVERITY.get(f.severity, "")),
                    (f.kind, "bold"),
                    ": ",
                    f.message,
                    (f"  ({f.source})", "dim"),
                )
            )
    for crash in report.crashes:
        _crash(crash, console)
    for trace in report.torch_traces:
        _trace(trace, console, top)
    for dump in report.xla_dumps:
        _dump(dump, console, top)
    for metrics in report.metrics:
        _metrics(metrics, console, top)
    if report.profile is not None:
        _profile(report.profile, console, top)
    if report.comparison is not None:
        _comparison(report.comparison, console, top)
    for note in report.notes:
        console.print(Text(f"note: {note}", style="dim"))


def _crash(crash: CrashDiagnosis, console: Console) -> None:
    style = "bold yellow" if crash.category == "unknown" else "bold red"
    console.rule(Text.assemble(("crash log ", "bold"), (crash.source, "")), style="dim")
    console.print(
        Text.assemble(
            (crash.category, style),
            "  ",
            (crash.title, "bold"),
            (f"  (confidence {crash.confidence:.2f})", "dim"),
        )
    )
    if crash.summary:
        console.print(Text(crash.summary))
    console.print(_kv(facts.crash_fact_rows(crash)))
    for key, records in facts.crash_records(crash, compact=True):
        table = section_table(key.replace("_", " "))
        columns = list(dict.fromkeys(k for rec in records for k in rec))
        for c in columns:
            table.add_column(c, overflow="fold")
        for rec in records:
            table.add_row(*(plain(rec.get(c, "")) for c in columns))
        console.print(table)
    console.print(Text.assemble(("cause: ", "bold"), crash.cause))
    console.print(Text.assemble(("fix: ", "bold green"), crash.fix))
    for citation in crash.citations:
        console.print(
            Text.assemble(("  source: ", "dim"), citation.label, " ", (citation.url, "blue underline"))
        )
        if citation.kb:
            console.print(
                Text.assemble(("    knowledge base ", "dim"), (citation.kb, "cyan"), ": ", citation.kb_text)
            )
    if crash.evidence.lines:
        console.print(Text("evidence:", style="bold"))
        for line in crash.evidence.lines[:5]:
            console.print(Text(f"  {line}", style="dim"))
    if crash.evidence.fix_rule:
        console.print(
            Text(f"fix chosen by {crash.evidence.fix_rule}: {crash.evidence.fix_reason}", style="dim")
        )
    if crash.other_matches:
        console.print(Text(f"also matched (weaker): {', '.join(crash.other_matches)}", style="dim"))


def _findings(findings: list[Finding], console: Console) -> None:
    for f in findings:
        console.print(
            Text.assemble(
                (f"[{f.severity}] ", _SEVERITY.get(f.severity, "")), (f.kind, "bold"), ": ", f.message
            )
        )
        if f.fix:
            console.print(Text.assemble(("    fix: ", "green"), f.fix))


def _trace(s: TorchTraceSummary, console: Console, top: int) -> None:
    console.rule(Text.assemble(("torch.profiler trace ", "bold"), s.source), style="dim")
    step = s.step_ms
    rows = [
        ("events", f"{s.events:,} on {s.threads} thread(s), {facts.fmt_ms(s.span_ms)} span"),
        (
            "steps",
            f"{len(s.steps) + s.steps_truncated}"
            + (f", median {facts.fmt_ms(step['median'])}, max {facts.fmt_ms(step['max'])}" if step else ""),
        ),
    ]
    if s.gap_ms:
        rows.append(("gaps", f"total {facts.fmt_ms(s.gap_ms['total'])}, max {facts.fmt_ms(s.gap_ms['max'])}"))
    if s.dataloader:
        d = s.dataloader
        share = f", {d.share_of_steps_pct:.0f}% of step time" if d.share_of_steps_pct is not None else ""
        rows.append(
            (
                "data loader",
                f"{facts.loader_waits(d)}{share}",
            )
        )
    console.print(_kv(rows))
    for title, ops in (
        ("top host ops (self time)", s.host_ops),
        ("top device ops (self time)", s.device_ops),
    ):
        if not ops:
            continue
        table = section_table(title)
        for name, justify in (
            ("op", "left"),
            ("calls", "right"),
            ("self", "right"),
            ("total", "right"),
            ("%", "right"),
        ):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for op in ops[:top]:
            table.add_row(
                plain(op.name),
                plain(op.count),
                plain(facts.fmt_us(op.self_us)),
                plain(facts.fmt_us(op.total_us)),
                plain(f"{op.self_pct:.1f}"),
            )
        console.print(table)
    if s.syncs:
        table = section_table("host-device syncs")
        for name in ("op", "calls", "time", "from"):
            table.add_column(name)
        for sync in s.syncs[:top]:
            table.add_row(
                plain(sync.name),
                plain(sync.count),
                plain(facts.fmt_us(sync.total_us)),
                plain(sync.source or "—"),
            )
        console.print(table)
    _findings(s.findings, console)
    for note in s.notes:
        console.print(Text(f"note: {note}", style="dim"))


def _dump(s: XlaDumpSummary, console: Console, top: int) -> None:
    console.rule(Text.assemble(("XLA dump ", "bold"), s.source), style="dim")
    kinds = ", ".join(f"{k} {v}" for k, v in s.fusion_kinds.items()) or "none"
    collectives = ", ".join(f"{k} {v}" for k, v in s.collective_counts.items()) or "none"
    console.print(
        _kv(
            [
                ("modules", f"{s.module_count} compiled, {s.distinct_names} distinct names"),
                ("fusions", f"{s.fusion_total} ({kinds})"),
                ("collectives", collectives),
            ]
        )
    )
    if s.recompilations:
        table = section_table("recompiled modules")
        for name in ("module", "compilations", "layouts"):
            table.add_column(name, overflow="fold")
        for r in s.recompilations[:top]:
            table.add_row(plain(r.name), plain(r.compilations), plain("\n".join(r.signatures[:4])))
        console.print(table)
    if s.largest_buffers:
        table = section_table("largest buffers")
        for name in ("buffer", "size", "shape", "kind", "module"):
            table.add_column(name, overflow="fold")
        for b in s.largest_buffers[:top]:
            table.add_row(
                plain(b.name), plain(fmt_bytes(b.size_bytes)), plain(b.shape), plain(b.kind), plain(b.module)
            )
        console.print(table)
    if s.collectives:
        table = section_table("collectives")
        for name in ("kind", "shape", "groups", "source"):
            table.add_column(name, overflow="fold")
        for c in s.collectives[:top]:
            table.add_row(
                plain(c.kind), plain(c.shape), plain(c.replica_groups), plain(c.source or c.op_name)
            )
        console.print(table)
    _findings(s.findings, console)


def _metrics(s: MetricsSummary, console: Console, top: int) -> None:
    console.rule(Text.assemble(("metrics report ", "bold"), s.source), style="dim")
    rows = [
        ("compilations", "—" if s.compilations is None else str(s.compilations)),
        ("compile time", "—" if s.compile_seconds is None else f"{s.compile_seconds:.1f} s"),
        ("executions", "—" if s.executions is None else str(s.executions)),
        ("device→host", "—" if s.device_to_host_transfers is None else str(s.device_to_host_transfers)),
    ]
    if s.fallback_ops:
        rows.append(("CPU fallback", ", ".join(f"{k} ({v})" for k, v in list(s.fallback_ops.items())[:top])))
    console.print(_kv(rows))
    _findings(s.findings, console)


_BOUND = {"compute": "green", "memory": "yellow", "unknown": "dim"}
_STATUS = {"slower": "bold red", "faster": "green", "added": "cyan", "removed": "dim", "unchanged": "dim"}


def _columns(table: Table, names: list[tuple[str, str]]) -> Table:
    for name, justify in names:
        # figures (right-aligned) never wrap: the text columns share what width is left
        table.add_column(name, justify=justify, overflow="fold", no_wrap=justify == "right")  # type: ignore[arg-type]
    return table


def _profile(p: ProfileSummary, console: Console, top: int) -> None:
    console.rule(Text.assemble(("XProf profile ", "bold"), p.path), style="dim")
    console.print(_kv(profile_rows.profile_overview(p)))
    categories = profile_rows.category_rows(p, top)
    if categories:
        table = _columns(
            section_table("busy time by HLO category"),
            [("category", "left"), ("ms", "right"), ("%", "right")],
        )
        for row in categories:
            table.add_row(*(plain(v) for v in row))
        console.print(table)
    ops = profile_rows.top_op_rows(p, top)
    if ops:
        wide = console.width >= WIDE_CONSOLE
        names = [("#", "right"), ("op", "left"), ("self ms", "right"), ("%", "right")]
        if wide:
            names += [("FLOPs/run", "right"), ("bytes/run", "right")]
        names += [("FLOP/B", "right"), ("bound", "left")]
        title = f"top {len(ops)} of {p.distinct_ops} ops by self time"
        if not wide:
            title += " (FLOPs and bytes per run: a wider terminal, --md, --html or --json)"
        table = _columns(section_table(title), names)
        table.columns[1].min_width = 24  # op names and their origin read whole, not folded by 8 chars
        for o in ops:
            origin = [
                v for v in dict.fromkeys((o.framework_op, _short_source(o.source))) if v != profile_rows.DASH
            ]
            cells = [plain(o.rank), Text.assemble(o.name, *((f"\n{v}", "dim") for v in origin))]
            cells += [plain(o.self_ms), plain(o.percent)]
            if wide:
                cells += [plain(o.flops), plain(o.bytes)]
            cells += [plain(o.intensity), plain(o.bound, _BOUND.get(o.bound, ""))]
            table.add_row(*cells)
        console.print(table)
    events = profile_rows.host_event_rows(p, top)
    if events and not ops:
        table = _columns(
            section_table("top host events"), [("event", "left"), ("self ms", "right"), ("count", "right")]
        )
        for row in events:
            table.add_row(*(plain(v) for v in row))
        console.print(table)
    for note in [*p.notes, *p.profiler_errors]:
        console.print(Text(f"note: {note}", style="dim"))


def _short_source(source: str) -> str:
    """`file.py:29` for a long `dir/.../file.py:29` (terminals are narrow; Markdown and HTML keep it)."""
    return source.rsplit("/", 1)[-1]


def _comparison(c: ProfileComparison, console: Console, top: int) -> None:
    console.rule(Text.assemble(("compared with baseline ", "bold"), c.before), style="dim")
    console.print(Text(c.summary, style="bold"))
    if c.comparable != "all figures":
        console.print(Text(f"compared: {c.comparable}"))
    table = _columns(
        section_table(),
        [("metric", "left"), ("baseline", "right"), ("this run", "right"), ("change", "right")],
    )
    for m in profile_rows.comparison_metric_rows(c):
        table.add_row(plain(m.label), plain(m.before), plain(m.after), plain(m.change))
    console.print(table)
    ops = profile_rows.comparison_op_rows(c, top)
    if ops:
        table = _columns(
            section_table("top ops: average self time per run (µs)"),
            [
                ("status", "left"),
                ("op", "left"),
                ("baseline", "right"),
                ("this run", "right"),
                ("change", "right"),
            ],
        )
        for o in ops:
            table.add_row(
                plain(o.status, _STATUS.get(o.status, "")),
                plain(o.label),
                plain(o.before),
                plain(o.after),
                plain(o.change),
            )
        console.print(table)
