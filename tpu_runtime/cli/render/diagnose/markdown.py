"""DiagnoseReport as GitHub-flavoured Markdown: the terminal summary's sections, in full."""

from __future__ import annotations

from collections.abc import Sequence

from tpu_runtime.cli.render.diagnose import facts, profile_rows
from tpu_runtime.cli.render.markdown_text import md_code, md_text
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.diagnose.profile_model import ProfileComparison, ProfileSummary
from tpu_runtime.diagnose.report import (
    Citation,
    CrashDiagnosis,
    DiagnoseReport,
    Finding,
    MetricsSummary,
    TorchTraceSummary,
    XlaDumpSummary,
)

__all__ = ["render_diagnose_markdown"]


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = [
        "| " + " | ".join(md_text(h) for h in headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return [*out, ""]


def render_diagnose_markdown(report: DiagnoseReport) -> str:
    lines = ["# tpu-agent diagnose", "", f"**{md_text(facts.headline(report))}**", ""]
    lines += _table(
        ["input", "kind", "recognised as"],
        [[md_code(i.path), i.kind, md_text(i.detail)] for i in report.inputs],
    )
    first = [f for f in report.findings if f.severity in ("high", "medium")][: report.top]
    if first:
        lines += ["## What to change first", ""]
        lines += [
            f"{i}. **{f.kind}** ({f.severity}, {md_code(f.source)}): {md_text(f.message)}"
            for i, f in enumerate(first, 1)
        ]
        lines += [""]
    for crash in report.crashes:
        lines += _crash(crash)
    for trace in report.torch_traces:
        lines += _trace(trace, report.top)
    for dump in report.xla_dumps:
        lines += _dump(dump, report.top)
    for metrics in report.metrics:
        lines += _metrics(metrics, report.top)
    if report.profile is not None:
        lines += _profile(report.profile, report.top)
    if report.comparison is not None:
        lines += _comparison(report.comparison, report.top)
    if report.notes:
        lines += ["## Notes", ""] + [f"- {md_text(n)}" for n in report.notes] + [""]
    return "\n".join(lines).rstrip() + "\n"


def _findings_and_notes(findings: list[Finding], notes: list[str]) -> list[str]:
    """A section's closing lines: its findings, then its notes."""
    return [*_findings(findings), *(f"- note: {md_text(n)}" for n in notes), ""]


def _findings(findings: list[Finding]) -> list[str]:
    if not findings:
        return []
    out = ["### Findings", ""]
    for f in findings:
        out.append(f"- **{f.severity}** `{f.kind}`: {md_text(f.message)}")
        if f.fix:
            out.append(f"  - fix: {md_text(f.fix)}")
        for c in f.citations:
            out.append(f"  - source: {_citation(c)}")
    return [*out, ""]


def _citation(c: Citation) -> str:
    """The link, then the knowledge-base fact it names (id, sentence, the sentence's own source)."""
    text = f"[{md_text(c.label)}]({c.url})"
    if c.kb:
        text += f"; knowledge base {md_code(c.kb)}"
        if c.kb_text:
            text += f": {md_text(c.kb_text)}"
        if c.kb_source:
            text += f" ([source]({c.kb_source}))"
    return text


def _crash(crash: CrashDiagnosis) -> list[str]:
    out = [f"## Crash log {md_code(crash.source)}", ""]
    out.append(f"**{crash.category}**: {md_text(crash.title)} (confidence {crash.confidence:.2f})")
    out.append("")
    if crash.summary:
        out += [md_text(crash.summary), ""]
    out += _table(["fact", "value"], [[md_text(k), md_code(v)] for k, v in facts.crash_fact_rows(crash)])
    for key, records in facts.crash_records(crash):
        columns = list(dict.fromkeys(k for rec in records for k in rec))
        out += [f"**{md_text(key.replace('_', ' '))}**", ""]
        out += _table(columns, [[md_text(rec.get(c, "")) for c in columns] for rec in records])
    out += [f"**Cause.** {md_text(crash.cause)}", "", f"**Fix.** {md_text(crash.fix)}", ""]
    out += [f"- {_citation(c)}" for c in crash.citations]
    if crash.evidence.lines:
        out += ["", "Evidence:", "", "```text", *crash.evidence.lines, "```"]
    if crash.evidence.fix_rule:
        out += ["", f"Fix chosen by `{crash.evidence.fix_rule}`: {md_text(crash.evidence.fix_reason)}"]
    if crash.other_matches:
        out += ["", f"Also matched (weaker): {', '.join(crash.other_matches)}"]
    return [*out, ""]


def _trace(s: TorchTraceSummary, top: int) -> list[str]:
    out = [f"## torch.profiler trace {md_code(s.source)}", ""]
    rows = [
        ["events", f"{s.events:,} on {s.threads} thread(s)"],
        ["span", facts.fmt_ms(s.span_ms)],
        ["steps", str(len(s.steps) + s.steps_truncated)],
        ["device events", str(s.device_events)],
    ]
    if s.step_ms:
        rows.append(
            ["step time", f"median {facts.fmt_ms(s.step_ms['median'])}, max {facts.fmt_ms(s.step_ms['max'])}"]
        )
    if s.gap_ms:
        rows.append(
            [
                "gaps between steps",
                f"total {facts.fmt_ms(s.gap_ms['total'])}, max {facts.fmt_ms(s.gap_ms['max'])}",
            ]
        )
    if s.dataloader:
        d = s.dataloader
        share = f"{d.share_of_steps_pct:.1f}% of step time" if d.share_of_steps_pct is not None else "—"
        rows.append(
            [
                "data loader",
                f"{facts.loader_waits(d)}, {share}",
            ]
        )
    out += _table(["", ""], rows)
    for title, ops in (
        ("Top host ops by self time", s.host_ops),
        ("Top device ops by self time", s.device_ops),
    ):
        if ops:
            out += [f"### {title}", ""]
            out += _table(
                ["op", "calls", "self", "total", "% of side"],
                [
                    [
                        md_code(o.name),
                        str(o.count),
                        facts.fmt_us(o.self_us),
                        facts.fmt_us(o.total_us),
                        f"{o.self_pct:.1f}",
                    ]
                    for o in ops[:top]
                ],
            )
    if s.steps:
        out += ["### Steps", ""]
        out += _table(
            ["step", "start", "duration", "gap before", "data loader", "syncs"],
            [
                [
                    str(st.step),
                    facts.fmt_ms(st.start_ms),
                    facts.fmt_ms(st.duration_ms),
                    facts.fmt_ms(st.gap_before_ms),
                    facts.fmt_ms(st.dataloader_ms),
                    str(st.syncs),
                ]
                for st in s.steps[: max(top, 1) * 4]
            ],
        )
    if s.syncs:
        out += ["### Host-device syncs", ""]
        out += _table(
            ["op", "calls", "time", "from"],
            [
                [md_code(x.name), str(x.count), facts.fmt_us(x.total_us), md_code(x.source or "—")]
                for x in s.syncs[:top]
            ],
        )
    return out + _findings_and_notes(s.findings, s.notes)


def _dump(s: XlaDumpSummary, top: int) -> list[str]:
    out = [f"## XLA dump {md_code(s.source)}", ""]
    out += _table(
        ["", ""],
        [
            ["modules", f"{s.module_count} compiled, {s.distinct_names} distinct names"],
            [
                "fusions",
                f"{s.fusion_total} ({', '.join(f'{k} {v}' for k, v in s.fusion_kinds.items()) or 'none'})",
            ],
            ["collectives", ", ".join(f"{k} {v}" for k, v in s.collective_counts.items()) or "none"],
        ],
    )
    if s.recompilations:
        out += ["### Recompiled modules", ""]
        out += _table(
            ["module", "compilations", "layouts", "module ids"],
            [
                [
                    md_code(r.name),
                    str(r.compilations),
                    "<br>".join(md_code(x) for x in r.signatures[:4]),
                    ", ".join(r.module_ids),
                ]
                for r in s.recompilations[:top]
            ],
        )
    if s.largest_buffers:
        out += ["### Largest buffers", ""]
        out += _table(
            ["buffer", "size", "shape", "kind", "module"],
            [
                [md_code(b.name), fmt_bytes(b.size_bytes), md_code(b.shape), b.kind, md_code(b.module)]
                for b in s.largest_buffers[:top]
            ],
        )
    if s.collectives:
        out += ["### Collectives", ""]
        out += _table(
            ["kind", "shape", "groups", "op", "source"],
            [
                [
                    c.kind,
                    md_code(c.shape),
                    md_code(c.replica_groups),
                    md_code(c.op_name),
                    md_code(c.source or "—"),
                ]
                for c in s.collectives[:top]
            ],
        )
    return out + _findings_and_notes(s.findings, s.notes)


def _metrics(s: MetricsSummary, top: int) -> list[str]:
    out = [f"## Metrics report {md_code(s.source)}", ""]
    rows = [
        ["compilations", "—" if s.compilations is None else str(s.compilations)],
        ["compile time", "—" if s.compile_seconds is None else f"{s.compile_seconds:.1f} s"],
        ["executions", "—" if s.executions is None else str(s.executions)],
        [
            "device-to-host transfers",
            "—" if s.device_to_host_transfers is None else str(s.device_to_host_transfers),
        ],
    ]
    out += _table(["", ""], rows)
    if s.fallback_ops:
        out += ["### CPU fallback ops", ""]
        out += _table(["op", "calls"], [[md_code(k), str(v)] for k, v in list(s.fallback_ops.items())[:top]])
    out += _findings(s.findings)
    return [*out, ""]


def _profile(p: ProfileSummary, top: int) -> list[str]:
    out = [f"## XProf profile {md_code(p.path)}", ""]
    out += _table(["", ""], [[md_text(k), md_text(v)] for k, v in profile_rows.profile_overview(p)])
    categories = profile_rows.category_rows(p, top)
    if categories:
        out += ["### Busy time by HLO category", ""]
        out += _table(
            ["category", "self time (ms)", "% of busy"], [[md_text(c) for c in row] for row in categories]
        )
    ops = profile_rows.top_op_rows(p, top)
    if ops:
        out += [f"### Top {len(ops)} of {p.distinct_ops} ops by self time", ""]
        out += _table(
            [
                "#",
                "op",
                "category",
                "self time (ms)",
                "% of device",
                "avg/run (µs)",
                "FLOPs/run",
                "bytes/run",
                "FLOP/B",
                "GFLOP/s",
                "GB/s",
                "bound",
                "framework op",
                "source",
            ],
            [
                [
                    o.rank,
                    md_code(o.name),
                    md_text(o.category),
                    o.self_ms,
                    o.percent,
                    o.avg_us,
                    o.flops,
                    o.bytes,
                    o.intensity,
                    o.gflops,
                    o.gbps,
                    o.bound,
                    md_code(o.framework_op) if o.framework_op != profile_rows.DASH else profile_rows.DASH,
                    md_code(o.source) if o.source != profile_rows.DASH else profile_rows.DASH,
                ]
                for o in ops
            ],
        )
    events = profile_rows.host_event_rows(p, top)
    if events and not ops:
        out += ["### Top host events by self time", ""]
        out += _table(["event", "self time (ms)", "count"], [[md_code(n), ms, c] for n, ms, c in events])
    out += [f"- note: {md_text(n)}" for n in [*p.notes, *p.profiler_errors]]
    return [*out, ""]


def _comparison(c: ProfileComparison, top: int) -> list[str]:
    out = ["## Compared with the baseline profile", ""]
    out += [f"Baseline {md_code(c.before)}, this run {md_code(c.after)}: {md_text(c.summary)}", ""]
    if c.comparable != "all figures":
        out += [f"Compared: {md_text(c.comparable)}", ""]
    out += _table(
        ["metric", "baseline", "this run", "change"],
        [[md_text(m.label), m.before, m.after, m.change] for m in profile_rows.comparison_metric_rows(c)],
    )
    ops = profile_rows.comparison_op_rows(c, top)
    if ops:
        out += [
            f"### Top ops, average self time per run (µs); changes beyond {c.threshold_percent:g}% count",
            "",
        ]
        out += _table(
            ["status", "op", "program", "baseline", "this run", "change"],
            [[o.status, md_code(o.label), md_code(o.program), o.before, o.after, o.change] for o in ops],
        )
    return [*out, ""]
