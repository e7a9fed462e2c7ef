"""`tpu-agent diagnose PATH...`: parse the arguments, run the diagnose job, render its report.

Imports nothing heavy at module level (the CLI must start fast and without torch or jax): the job and
the renderers are imported inside the command.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

__all__ = ["diagnose"]

out = Console()
err = Console(stderr=True)


def diagnose(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="crash log (or - for stdin), *.xplane.pb or profile folder, torch.profiler trace "
            "(.json/.json.gz), --xla_dump_to folder, or a metrics report",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    md: Annotated[Path | None, typer.Option(help="also write the report as Markdown")] = None,
    html: Annotated[
        Path | None, typer.Option(help="also write a self-contained HTML report with a step timeline")
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="rows per table (ops, buffers, syncs)")] = 15,
) -> None:
    """What failed or where the time goes: crash logs, XProf profiles, torch.profiler traces, XLA dumps.

    Exit code 0 when diagnosed (also for an 'unknown' crash), 2 for input that cannot be read.
    Example: tpu-agent diagnose run.log   (or: tpu-agent diagnose trace.json.gz --html report.html)
    """
    from tpu_runtime.cli.app import _progress
    from tpu_runtime.diagnose.errors import BadInputError
    from tpu_runtime.diagnose.job import run_diagnose

    try:
        with _progress(enabled=err.is_terminal and not as_json) as progress:
            report = run_diagnose(paths, top, progress)
    except BadInputError as exc:
        err.print(Text.assemble(("error: ", "bold red"), str(exc)), highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
    else:
        from tpu_runtime.cli.render_diagnose_terminal import render_diagnose_terminal

        render_diagnose_terminal(report, out, top=top)
    if md:
        from tpu_runtime.cli.render_diagnose_markdown import render_diagnose_markdown

        md.write_text(render_diagnose_markdown(report), encoding="utf-8")
        err.print(f"wrote {md}", highlight=False)
    if html:
        from tpu_runtime.cli.render_diagnose_html import render_diagnose_html

        html.write_text(render_diagnose_html(report), encoding="utf-8")
        err.print(f"wrote {html}", highlight=False)
