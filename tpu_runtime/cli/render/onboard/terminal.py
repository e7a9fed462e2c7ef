"""OnboardReport as a compact rich summary for the terminal.

Every string that came from the user's model (op names, module paths, source lines, notes) goes in as
`rich.text.Text`, never as markup, so a `[bold]` in a module name prints as typed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from tpu_runtime.cli.render.onboard import shaping
from tpu_runtime.cli.render.terminal_text import plain, section_table
from tpu_runtime.cli.render.units import fmt_bytes
from tpu_runtime.onboard.report import NumericsReport, OnboardReport, Preflight, ServingPlan

__all__ = ["render_onboard_terminal"]

T = TypeVar("T")

_STATUS_STYLE = {"supported": "green", "composite": "cyan", "cpu_variant": "yellow", "missing": "bold red"}


# The sections a report may lack: their title, and the label of the line that stands for them then.
_OPTIONAL = {
    "numerics": ("numerics vs float64 CPU (emulated TPU precision)", "numerics not run"),
    "preflight": ("HBM preflight", "preflight not run"),
    "serving": ("serving path", "no serving plan"),
}


def _optional(
    report: OnboardReport, console: Console, section: str, part: T | None, body: Callable[[T], None]
) -> None:
    """A section the report may lack: its rule, then `body(part)`, or what is missing (in yellow) and why."""
    title, missing = _OPTIONAL[section]
    console.rule(title, align="left")
    if part is None:
        console.print(Text.assemble((missing, "yellow"), ": ", shaping.why_absent(report, section)))
    else:
        body(part)


def _yes(flag: bool) -> Text:
    return Text("yes", style="green") if flag else Text("no", style="bold red")


def _more(console: Console, shown: int, total: int, what: str) -> None:
    if total > shown:
        console.print(Text(f"  … {total - shown} more {what} (see the Markdown/HTML report)", style="dim"))


def _header(report: OnboardReport, console: Console) -> None:
    m = report.model
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("model", Text.assemble((m.class_name, "bold"), "  ", (m.file, "dim")))
    params = f"{shaping.fmt_count(m.parameters)}  ({fmt_bytes(m.parameter_bytes)} {m.dtype}"
    params += f", buffers {fmt_bytes(m.buffers_bytes)})" if m.buffers_bytes else ")"
    grid.add_row("params", plain(params))
    grid.add_row("convention", plain(m.convention))
    if m.hf_architecture or m.hf_model_type:
        grid.add_row("hugging face", plain(" / ".join(x for x in (m.hf_architecture, m.hf_model_type) if x)))
    if m.is_decoder_lm:
        grid.add_row("decoder LM", plain(m.decoder_lm_evidence or "yes"))
    if m.shrunk:
        grid.add_row(
            "shrunk", plain(m.shrink_note or "ops captured on a narrower copy of the model", "yellow")
        )
    if report.size is not None:
        for label, value in shaping.size_rows(report.size):
            grid.add_row(label, plain(value, "yellow" if label == "built on" and "fake" in value else ""))
    grid.add_row("op table", plain(report.op_table))
    if report.tpu_trace_note:
        grid.add_row("TorchTPU trace", plain(report.tpu_trace_note))
    if m.output_summary:
        grid.add_row("output", plain(m.output_summary, "dim"))
    console.rule(Text("tpu-agent onboard", style="bold"))
    console.print(grid)


def _coverage(report: OnboardReport, console: Console) -> None:
    rows = shaping.coverage_rows(report)
    console.rule("op coverage", align="left")
    if not rows:
        console.print(plain("no ops were captured", "dim"))
        return
    table = section_table()
    table.add_column("phase")
    for s in shaping.STATUSES:
        table.add_column(shaping.STATUS_LABELS[s], justify="right", style=_STATUS_STYLE[s])
    table.add_column("total ops", justify="right")
    table.add_column("calls", justify="right", style="dim")
    for r in rows:
        table.add_row(
            plain(r.label),
            *(plain(r.ops[s]) for s in shaping.STATUSES),
            plain(r.total_ops),
            plain(r.total_calls),
        )
    console.print(table)


def _missing(report: OnboardReport, console: Console, top: int) -> None:
    rows = shaping.missing_rows(report)
    console.rule(f"missing ops ({len(rows)})", align="left")
    if not rows:
        console.print(plain("every captured op has a TorchTPU lowering", "green"))
        return
    table = section_table()
    table.add_column("op", style="bold red", overflow="fold")
    table.add_column("phase")
    table.add_column("count", justify="right")
    table.add_column("module", overflow="fold")
    table.add_column("source", overflow="fold", style="dim")
    table.add_column("remedies (--md/--html show the code)", overflow="fold")
    kinds = _remedy_kinds(report)
    for r in rows[:top]:
        found = kinds.get(r.op)
        remedy = plain(", ".join(found)) if found else plain("no remedy found", "dim")
        count = "—" if r.count is None else str(r.count)
        table.add_row(plain(r.op), plain(r.phase), plain(count), plain(r.module), plain(r.source), remedy)
    console.print(table)
    _more(console, min(top, len(rows)), len(rows), "missing ops")


def _risks(report: OnboardReport, console: Console, top: int) -> None:
    console.rule(f"recompilation / host-sync risks ({len(report.risks)})", align="left")
    if not report.risks:
        console.print(plain("none found", "green"))
        return
    table = section_table()
    table.add_column("kind", style="yellow")
    table.add_column("op", overflow="fold")
    table.add_column("module", overflow="fold")
    table.add_column("source", overflow="fold", style="dim")
    table.add_column("detail", overflow="fold")
    for r in report.risks[:top]:
        table.add_row(
            plain(r.kind), plain(r.op), plain(r.module), plain(r.source), plain(_first_sentence(r.detail))
        )
    console.print(table)
    _more(console, min(top, len(report.risks)), len(report.risks), "risks")


def _numerics(num: NumericsReport, console: Console, top: int) -> None:
    if num.compared_on:
        console.print(Text.assemble(("compared on", "bold"), ": ", num.compared_on))
    if num.error:
        console.print(Text.assemble(("error", "bold red"), ": ", num.error))
    table_data = shaping.layer_table(num)
    if table_data is not None:
        table = section_table()
        table.add_column("mode", style="bold")
        table.add_column("tolerance", justify="right")
        table.add_column("worst layer", overflow="fold")
        table.add_column("worst rel", justify="right")
        table.add_column("failing", justify="right")
        table.add_column("first divergent", overflow="fold")
        for s in shaping.mode_summaries(table_data):
            w = s.worst
            worst_style = "" if w is None or w.ok else "red"
            table.add_row(
                plain(s.mode),
                plain("—" if s.tolerance is None else f"{s.tolerance:.3g}"),
                plain(w.layer if w else "—"),
                plain(shaping.fmt_rel(w.rel) if w else "—", worst_style),
                plain(f"{s.failing}/{s.layers}", "red" if s.failing else "green"),
                plain(s.first_divergent, "bold red") if s.first_divergent else plain("none", "green"),
            )
        console.print(table)
        focus, layers = table_data.highlight(top)
        if focus is not None:
            title = Text.assemble("around the first divergent layer ", (focus, "bold"))
        else:
            title = Text(f"top {len(layers)} layers by error / tolerance")
        near = section_table()
        console.print(title)
        near.add_column("layer", overflow="fold")
        for mode in table_data.modes:
            near.add_column(f"{mode} rel", justify="right")
        for layer in layers:
            cells = []
            for mode in table_data.modes:
                c = table_data.get(layer, mode)
                cells.append(
                    plain("—") if c is None else plain(shaping.fmt_rel(c.rel), "" if c.ok else "bold red")
                )
            name = Text(layer, style="bold" if layer == focus else "")
            if layer == focus:
                name.append("  ◀ first divergent", style="red")
            near.add_row(name, *cells)
        console.print(near)
    else:
        console.print(plain("no per-layer rows were recorded", "dim"))
    console.print(Text.assemble(("device check", "bold"), ": ", num.device_check))


def _preflight(pf: Preflight, console: Console) -> None:
    fits = shaping.generation_fits(pf)
    table = section_table()
    table.add_column("generation", style="bold")
    table.add_column("HBM/chip", justify="right")
    table.add_column("inference", justify="right")
    table.add_column("training", justify="right")
    table.add_column("fits 1 chip (inf/train)")
    table.add_column("chips (inf/train)", justify="right")
    table.add_column("smallest slice (inf/train)")
    show_xla = any(f.xla_bytes is not None for f in fits)
    if show_xla:
        table.add_column("XLA", justify="right")
    for f in fits:
        row = [
            plain(f.generation),
            plain(fmt_bytes(f.hbm_per_chip_bytes)),
            plain(fmt_bytes(f.inference_bytes)),
            plain(fmt_bytes(f.training_bytes)),
            Text.assemble(_yes(f.fits), " / ", _yes(f.training_fits)),
            plain(f"{f.inference_chips} / {f.training_chips}"),
            plain(f"{f.smallest_slice_inference or '—'} / {f.smallest_slice_training or '—'}"),
        ]
        if show_xla:
            row.append(plain(fmt_bytes(f.xla_bytes)))
        table.add_row(*row)
    console.print(table)
    for f in fits:
        line = f"{f.generation}: serve with {f.serving_layout}"
        if f.training_chips_remat:
            line += f"; training with remat needs {f.training_chips_remat} chips"
        console.print(plain(line))
    b = pf.breakdown
    shape = f"batch {b.batch}" + (f", seq {b.seq}" if b.seq is not None else "")
    parts = [
        f"weights {fmt_bytes(b.weights)}",
        f"activations {fmt_bytes(b.activations_inference)} (inf)"
        f" / {fmt_bytes(b.activations_training)} (train)",
        f"KV cache {fmt_bytes(b.kv_cache)}",
        f"gradients {fmt_bytes(b.gradients)}",
        f"optimizer {fmt_bytes(b.optimizer_state)}",
    ]
    if b.activations_training_remat is not None:
        parts.append(f"training activations with remat {fmt_bytes(b.activations_training_remat)}")
    if b.kv_bytes_per_token is not None:
        parts.append(f"KV cache per token {fmt_bytes(int(b.kv_bytes_per_token))}")
    console.print(Text.assemble((shape, "bold"), ": ", ", ".join(parts), style="dim"))
    if b.note:
        console.print(plain(b.note, "dim"))
    if pf.xla_note:
        console.print(Text.assemble(("XLA", "bold"), ": ", pf.xla_note))


def _serving(sp: ServingPlan, console: Console) -> None:
    console.print(Text.assemble(("path", "bold"), ": ", (sp.path, "bold cyan"), " — ", sp.reason))
    console.print(
        Text.assemble(("eager mode", "bold"), ": ", (sp.eager_mode, "cyan"), " — ", sp.eager_reason)
    )
    if sp.pretraining:
        console.print(Text.assemble(("pretraining", "bold"), ": ", sp.pretraining))
    if sp.snippet.strip():
        console.print(Syntax(sp.snippet.rstrip("\n"), "python", theme="ansi_dark", word_wrap=True))


def _notes(report: OnboardReport, console: Console, top: int) -> None:
    if not report.notes and not report.timings and not report.isolation:
        return
    console.rule("notes", align="left")
    for note in report.notes[:top]:
        console.print(Text.assemble("• ", note))
    _more(console, min(top, len(report.notes)), len(report.notes), "notes")
    if report.timings:
        spent = ", ".join(f"{k} {v:.1f}s" for k, v in report.timings.items())
        console.print(Text(f"timings: {spent}", style="dim"))
    if report.isolation:
        console.print(Text(f"isolation: {report.isolation}", style="dim"))


def render_onboard_terminal(report: OnboardReport, console: Console, top: int = 15) -> None:
    """Print a compact summary of `report`; `top` caps the long lists (missing ops, risks, layers, notes)."""
    top = max(top, 1)
    _header(report, console)
    _coverage(report, console)
    _missing(report, console, top)
    _risks(report, console, top)
    _optional(report, console, "numerics", report.numerics, lambda num: _numerics(num, console, top))
    _optional(report, console, "preflight", report.preflight, lambda pf: _preflight(pf, console))
    _optional(report, console, "serving", report.serving, lambda sp: _serving(sp, console))
    _notes(report, console, top)


def _remedy_kinds(report: OnboardReport) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = {}
    for remedy in report.remedies:
        seen = kinds.setdefault(remedy.op, [])
        if remedy.kind not in seen:
            seen.append(remedy.kind)
    return kinds


def _first_sentence(text: str, limit: int = 100) -> str:
    """Tables stay readable at 80 columns; the full text is in --json, --md and --html."""
    head = text.split(". ")[0].split(": ")[0] if len(text) > limit else text
    return head if len(head) <= limit else head[: limit - 1] + "…"
