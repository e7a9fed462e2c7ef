"""Kernel reports on a terminal: the stage-by-stage check, the tuning attempts and the template list.

Every string that came from the user's kernel file (paths, parameter values, messages) is escaped before it
goes in as markup, so a `[bold]` in a message prints as typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from tpu_runtime.kernels.report import KernelCheckReport, TuneReport
    from tpu_runtime.kernels.scaffold import Template

__all__ = ["VERDICT_STYLE", "render_check", "render_templates", "render_tune"]

VERDICT_STYLE = {
    "pass": "green",
    "fail": "bold red",
    "warn": "yellow",
    "skip": "dim",
    "not_run": "dim",
    "unchecked": "yellow",
}


def render_check(report: KernelCheckReport, console: Console, debug: bool = False) -> None:
    """The check report as terminal tables."""
    params = ", ".join(f"{k}={v}" for k, v in report.params.items()) or "none"
    console.print(f"[bold]{escape(report.file)}[/]  params: {escape(params)}", highlight=False)
    table = Table(show_header=True, header_style="bold", expand=True)
    table.add_column("stage", no_wrap=True, min_width=13)
    table.add_column("verdict", no_wrap=True, min_width=7)
    table.add_column("what was found", ratio=1, overflow="fold")
    for stage in report.stages:
        style = VERDICT_STYLE.get(stage.verdict, "")
        label = stage.title.split(" ")[0] + " " + stage.stage
        table.add_row(label, f"[{style}]{stage.verdict.upper()}[/]", escape(stage.message))
    console.print(table)
    correctness = report.stage("correctness")
    if correctness and correctness.cases:
        cases = Table(title="correctness cases", header_style="bold")
        for column in ("shape", "dtype", "verdict", "max scaled error", "seconds"):
            cases.add_column(column)
        for case in correctness.cases:
            dims = ", ".join(f"{k}={v}" for k, v in case.shape.items())
            scaled = "" if case.max_scaled_error is None else f"{case.max_scaled_error:.3g}"
            style = VERDICT_STYLE.get(case.verdict, "")
            cases.add_row(
                escape(dims), case.dtype, f"[{style}]{case.verdict}[/]", scaled, f"{case.seconds:.2f}"
            )
        console.print(cases)
    compiled = report.stage("compile")
    if compiled and compiled.generations:
        gens = Table(title=f"compile at target shape {report.target_shape}", header_style="bold")
        for column in ("generation", "verdict", "VMEM (model)", "compile s", "bound", "estimate"):
            gens.add_column(column)
        for g in compiled.generations:
            vmem = "" if g.vmem_bytes is None else f"{g.vmem_bytes / 2**20:.2f} MiB"
            if g.vmem_capacity_bytes:
                vmem += f" / {g.vmem_capacity_bytes / 2**20:.0f}"
            estimate = "" if g.estimate_seconds is None else f"{g.estimate_seconds * 1e3:.4g} ms"
            style = VERDICT_STYLE.get(g.verdict, "")
            gens.add_row(
                g.generation,
                f"[{style}]{g.verdict}[/]",
                vmem,
                "" if g.compile_seconds is None else f"{g.compile_seconds:.2f}",
                g.bound or "",
                estimate,
            )
        console.print(gens)
    torch_stage = report.stage("torch")
    if torch_stage and torch_stage.snippet and torch_stage.verdict in ("pass", "skip"):
        console.print("[bold]PyTorch snippet[/] (torch.tpu.pallas.jax_op):")
        console.print(torch_stage.snippet, markup=False, highlight=False, soft_wrap=True)
    for stage in report.stages:
        for detail in stage.details if (debug or stage.verdict == "fail") else []:
            console.print(f"  [dim]{stage.stage}:[/] {escape(detail)}", highlight=False)
    seed_note = report.notes[0] if report.notes else ""
    console.print(f"{seed_note}; {report.seconds:.1f} s", style="dim", highlight=False, soft_wrap=True)
    if debug:
        for note in report.notes[1:]:
            console.print(note, markup=False, highlight=False)
    verdict_style = VERDICT_STYLE[report.verdict]
    shown = "CANNOT CHECK IN INTERPRET MODE" if report.verdict == "unchecked" else report.verdict.upper()
    console.print(f"verdict: [{verdict_style}]{shown}[/]")


def render_tune(report: TuneReport, console: Console) -> None:
    """The tuning run as one table of attempts, the best marked, then the ranking and run folder."""
    resumed = " (resumed)" if report.resumed else ""
    console.print(
        f"[bold]{escape(report.file)}[/] on {report.generation}: {report.attempts_used} of {report.budget} "
        f"attempts used{resumed}; space of {report.candidates_total} candidates",
        highlight=False,
    )
    table = Table(header_style="bold", expand=True)
    columns = ["#", "params", "verdict", "estimate", "bound", "VMEM", "s"]
    timed = any(a.measured_seconds is not None for a in report.attempts)
    if timed:
        columns.insert(4, "measured")
    for column in columns:
        table.add_column(column, no_wrap=column != "params")
    best_n = report.best.n if report.best else None
    for a in report.attempts:
        style = VERDICT_STYLE.get(a.verdict, "red")
        mark = " *" if a.n == best_n else ""
        estimate = "" if a.estimate_seconds is None else f"{a.estimate_seconds * 1e3:.4g} ms"
        vmem = "" if a.vmem_bytes is None else f"{a.vmem_bytes / 2**20:.2f} MiB"
        params = escape(", ".join(f"{k}={v}" for k, v in a.params.items()))
        if a.verdict != "pass":
            params += f"\n[dim]{escape(a.message[:200])}[/]"
        cells = [f"{a.n}{mark}", params, f"[{style}]{a.verdict}[/]", estimate, a.bound or "", vmem]
        if timed:
            measured = "" if a.measured_seconds is None else f"{a.measured_seconds * 1e3:.4g} ms"
            cells.insert(4, measured)
        table.add_row(*cells, f"{a.seconds:.1f}")
    console.print(table)
    console.print(report.message, highlight=False, markup=False)
    console.print(f"ranking: {report.ranking}", style="dim", highlight=False, markup=False)
    console.print(f"run folder: {report.run_dir}", style="dim", highlight=False, markup=False)


def render_templates(templates: Sequence[Template], console: Console) -> None:
    """The templates `kernel new` can start from, one row each."""
    table = Table(title="kernel templates", show_lines=False)
    table.add_column("template", style="cyan")
    table.add_column("what it is")
    for t in templates:
        table.add_row(t.name, t.summary)
    console.print(table)
