"""OnboardReport as GitHub-flavoured Markdown: the same sections as the terminal summary, in full."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tpu_runtime.cli.render.markdown_text import md_code, md_fence, md_text
from tpu_runtime.cli.render.onboard import shaping
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.onboard.report import NumericsReport, OnboardReport, Preflight, ServingPlan

__all__ = ["render_onboard_markdown"]

T = TypeVar("T")

# The sections a report may lack: their heading, and the label of the line that stands for them then.
_OPTIONAL = {
    "numerics": ("## Numerics (per layer, emulated TPU precision vs float64 CPU)", "Numerics not run"),
    "preflight": ("## HBM preflight", "Preflight not run"),
    "serving": ("## Serving path", "No serving plan"),
}


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """`align`: one character per column, 'l' or 'r'."""
    marks = [("---:" if a == "r" else "---") for a in (align or "l" * len(header))]
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    out.extend("| " + " | ".join(r) + " |" for r in rows)
    return out


def _yes(flag: bool) -> str:
    return "✅ yes" if flag else "❌ no"


def _header(report: OnboardReport) -> list[str]:
    m = report.model
    params = f"{shaping.fmt_count(m.parameters)} ({fmt_bytes(m.parameter_bytes)} {md_text(m.dtype)}"
    params += f", buffers {fmt_bytes(m.buffers_bytes)})" if m.buffers_bytes else ")"
    rows = [
        ["Model", f"{md_code(m.class_name)} from {md_code(m.file)}"],
        ["Parameters", params],
        ["Loaded with", md_text(m.convention)],
    ]
    if m.hf_architecture or m.hf_model_type:
        rows.append(
            ["Hugging Face", md_text(" / ".join(x for x in (m.hf_architecture, m.hf_model_type) if x))]
        )
    if m.is_decoder_lm:
        how = f" ({md_text(m.decoder_lm_evidence)})" if m.decoder_lm_evidence else ""
        rows.append(["Kind", f"decoder-only language model{how}"])
    if m.shrunk:
        rows.append(["Shrunk", md_text(m.shrink_note or "ops were captured on a narrower copy of the model")])
    if report.size is not None:
        rows += [[label.capitalize(), md_text(value)] for label, value in shaping.size_rows(report.size)]
    rows.append(["Op table", md_text(report.op_table)])
    if report.tpu_trace_note:
        rows.append(["TorchTPU trace", md_text(report.tpu_trace_note)])
    if m.output_summary:
        rows.append(["Output", md_text(m.output_summary)])
    rows.append(["Schema", str(report.schema_version)])
    return [f"# TPU onboarding report: {md_code(m.class_name)}", "", *_table(["", ""], rows)]


def _coverage(report: OnboardReport) -> list[str]:
    out = ["## Op coverage", ""]
    rows = shaping.coverage_rows(report)
    if not rows:
        return [*out, "_No ops were captured._"]
    body = [
        [
            md_text(r.label),
            *(f"{r.ops[s]} ({r.calls[s]} calls)" for s in shaping.STATUSES),
            f"{r.total_ops} ({r.total_calls} calls)",
        ]
        for r in rows
    ]
    header = ["phase", *(shaping.STATUS_LABELS[s] for s in shaping.STATUSES), "total"]
    return [
        *out,
        "Distinct ATen overloads by TorchTPU status (calls in brackets).",
        "",
        *_table(header, body),
    ]


def _missing(report: OnboardReport) -> list[str]:
    rows = shaping.missing_rows(report)
    out = [f"## Missing ops ({len(rows)})", ""]
    if not rows:
        return [*out, "_Every captured op has a TorchTPU lowering._"]
    body = []
    for r in rows:
        fix = r.first_remedy
        body.append(
            [
                md_code(r.op),
                md_text(r.phase),
                "—" if r.count is None else str(r.count),
                md_code(r.module),
                md_code(r.source),
                f"**{md_text(fix.kind)}**: {md_text(fix.summary)}" if fix else "_no remedy found_",
            ]
        )
    out += _table(["op", "phase", "count", "module", "source", "first remedy"], body, "llrlll")
    with_fixes = [r for r in rows if r.remedies]
    done: set[str] = set()
    for r in with_fixes:
        if r.op in done:
            continue
        done.add(r.op)
        out += ["", f"### Remedies for {md_code(r.op)}", ""]
        for fix in r.remedies:
            line = f"- **{md_text(fix.kind)}**: {md_text(fix.summary)}"
            if fix.cost:
                line += f" _(cost: {md_text(fix.cost)})_"
            out.append(line)
            if fix.code:
                out += ["", *md_fence(fix.code, "python"), ""]
    return out


def _risks(report: OnboardReport) -> list[str]:
    out = [f"## Recompilation and host-sync risks ({len(report.risks)})", ""]
    if not report.risks:
        return [*out, "_None found._"]
    body = [
        [md_text(r.kind), md_code(r.op), md_code(r.module), md_code(r.source), md_text(r.detail)]
        for r in report.risks
    ]
    return out + _table(["kind", "op", "module", "source", "detail"], body)


def _optional(
    report: OnboardReport, section: str, part: T | None, body: Callable[[T], list[str]]
) -> list[str]:
    """A section the report may lack: its heading, then `body(part)`, or a line saying what is missing and
    why."""
    heading, missing = _OPTIONAL[section]
    if part is None:
        return [heading, "", f"{missing}: {md_text(shaping.why_absent(report, section))}"]
    return [heading, "", *body(part)]


def _numerics(num: NumericsReport) -> list[str]:
    out = [f"- Reference: {md_text(num.reference)}", f"- Device check: {md_text(num.device_check)}"]
    if num.compared_on:
        out.append(f"- Compared on: {md_text(num.compared_on)}")
    if num.first_divergent_layer:
        out.append(f"- First divergent layer (DEFAULT): {md_code(num.first_divergent_layer)}")
    if num.error:
        out.append(f"- Error: {md_text(num.error)}")
    table = shaping.layer_table(num)
    if table is None:
        return [*out, "", "_No per-layer rows were recorded._"]
    body = []
    for s in shaping.mode_summaries(table):
        worst = s.worst
        body.append(
            [
                md_text(s.mode),
                "—" if s.tolerance is None else f"{s.tolerance:.3g}",
                md_code(worst.layer) if worst else "—",
                shaping.fmt_rel(worst.rel) if worst else "—",
                f"{s.failing} / {s.layers}",
                md_code(s.first_divergent) if s.first_divergent else "none",
            ]
        )
    header = ["mode", "tolerance", "worst layer", "worst rel", "failing", "first divergent"]
    out += ["", *_table(header, body, "lrlrrl")]
    focus, layers = table.highlight(15)
    rows = []
    for layer in layers:
        cells = []
        for mode in table.modes:
            c = table.get(layer, mode)
            cells.append("—" if c is None else shaping.fmt_rel(c.rel) + ("" if c.ok else " ❌"))
        mark = " ⬅" if layer == focus else ""
        rows.append([f"{md_code(layer)}{mark}", *cells])
    header = ["layer", *(f"{md_text(m)} rel" for m in table.modes)]
    if focus is not None:
        heading = f"### Around the first divergent layer {md_code(focus)}"
    else:
        heading = f"### Top {len(layers)} layers by error / tolerance"
    out += ["", heading, "", *_table(header, rows, "l" + "r" * len(table.modes))]
    return out


def _preflight(pf: Preflight) -> list[str]:
    out: list[str] = []
    fits = shaping.generation_fits(pf)
    show_xla = any(f.xla_bytes is not None for f in fits)
    body = []
    for f in fits:
        row = [
            md_text(f.generation),
            fmt_bytes(f.hbm_per_chip_bytes),
            fmt_bytes(f.inference_bytes),
            fmt_bytes(f.training_bytes),
            _yes(f.fits),
            _yes(f.training_fits),
            f"{f.inference_chips} / {f.training_chips}",
            f"{md_text(f.smallest_slice_inference or '—')} / {md_text(f.smallest_slice_training or '—')}",
        ]
        if show_xla:
            row.append(fmt_bytes(f.xla_bytes))
        body.append(row)
    header = [
        "generation",
        "HBM / chip",
        "inference",
        "training",
        "inference fits 1 chip",
        "training fits 1 chip",
        "chips (inf / train)",
        "smallest slice (inf / train)",
    ]
    if show_xla:
        header.append("XLA measured")
    out += _table(header, body, "lrrrllll" + ("r" if show_xla else "")) if fits else ["_No generations._"]
    out += ["", *[f"- {md_text(f.generation)}: serve with {md_text(f.serving_layout)}" for f in fits]]
    b = pf.breakdown
    shape = f"batch {b.batch}" + (f", seq {b.seq}" if b.seq is not None else "")
    amounts = (
        b.weights,
        b.activations_inference,
        b.kv_cache,
        b.gradients,
        b.optimizer_state,
        b.activations_training,
    )
    out += [
        "",
        f"Estimate for {shape}:",
        "",
        *_table(
            ["weights", "activations (inf)", "KV cache", "gradients", "optimizer", "activations (train)"],
            [[fmt_bytes(x) for x in amounts]],
            "rrrrrr",
        ),
    ]
    if b.activations_training_remat is not None:
        remat = fmt_bytes(b.activations_training_remat)
        out += ["", f"Training activations with remat (each block recomputed): {remat}"]
    if b.kv_bytes_per_token is not None:
        out += ["", f"KV cache per token of context: {fmt_bytes(int(b.kv_bytes_per_token))}"]
    if b.note:
        out += ["", md_text(b.note)]
    if pf.xla_note:
        out += ["", f"XLA: {md_text(pf.xla_note)}"]
    if pf.sources:
        out += ["", "Sources:", *(f"- {md_text(s)}" for s in pf.sources)]
    return out


def _serving(sp: ServingPlan) -> list[str]:
    out = [
        f"- Path: **{md_text(sp.path)}**: {md_text(sp.reason)}",
        f"- Eager mode: **{md_text(sp.eager_mode)}**: {md_text(sp.eager_reason)}",
        f"- Pretraining: {md_text(sp.pretraining)}",
    ]
    if sp.snippet.strip():
        out += ["", *md_fence(sp.snippet, "python")]
    if sp.sources:
        out += ["", "Sources:", *(f"- {md_text(s)}" for s in sp.sources)]
    return out


def _notes(report: OnboardReport) -> list[str]:
    out: list[str] = []
    if report.notes:
        out += ["## Notes", "", *(f"- {md_text(n)}" for n in report.notes)]
    if report.timings:
        spent = ", ".join(f"{md_text(k)} {v:.1f} s" for k, v in report.timings.items())
        out += ["", f"_Timings: {spent}_"]
    if report.isolation:
        out += ["", f"_Isolation: {md_text(report.isolation)}_"]
    return out


def _inventory(report: OnboardReport) -> list[str]:
    if not report.ops:
        return []
    body = [
        [
            md_code(u.op),
            md_text(u.phase),
            md_text(shaping.STATUS_LABELS.get(u.status, u.status)),
            str(u.count),
            md_code(u.module),
            md_code(u.source),
            md_code(u.tpu_op) if u.tpu_op else "",
        ]
        for u in shaping.ops_by_severity(report.ops)
    ]
    return [
        "<details>",
        f"<summary>All {len(report.ops)} captured ops</summary>",
        "",
        *_table(["op", "phase", "status", "count", "module", "source", "TPU op"], body, "lllrlll"),
        "",
        "</details>",
    ]


def render_onboard_markdown(report: OnboardReport) -> str:
    """The whole report as one Markdown document (tables, remedy code and the serving snippet fenced)."""
    sections = [
        _header(report),
        _coverage(report),
        _missing(report),
        _risks(report),
        _optional(report, "numerics", report.numerics, _numerics),
        _optional(report, "preflight", report.preflight, _preflight),
        _optional(report, "serving", report.serving, _serving),
        _notes(report),
        _inventory(report),
    ]
    lines: list[str] = []
    for section in sections:
        if section:
            if lines:
                lines.append("")
            lines += section
    return "\n".join(lines) + "\n"
