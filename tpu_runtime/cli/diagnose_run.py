"""What `tpu-agent diagnose` does once its arguments are parsed: run the diagnose job, then render its
report. Kept apart from the typer command (`tpu_runtime.cli.diagnose_cmd`) so that the console script
can run a plain `diagnose PATH [--json]` without loading typer (`tpu_runtime.cli.diagnose_route`), and
both print the same bytes from the same code.

Imports neither typer nor rich at module level; the job, the progress bar and the renderers are imported
when they are used.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_runtime.cli.consoles import make_console, print_json

if TYPE_CHECKING:
    from tpu_runtime.diagnose.report import DiagnoseReport

__all__ = ["DEFAULT_TOP", "analyse", "diagnose_command", "err", "out", "render"]

#: Rows per table (ops, buffers, syncs) when `--top` is not given, by the typer command or the plain route.
DEFAULT_TOP = 15

out = make_console()
err = make_console(stderr=True)


def diagnose_command(
    paths: Sequence[str],
    *,
    as_json: bool,
    top: int,
    compare: str | None = None,
    md: Path | None = None,
    html: Path | None = None,
) -> None:
    """Analyse `paths` and render the report, with the cyclic garbage collector paused (`gc_paused`):
    the imports and pydantic's model builds make many objects and few cycles, and a collection that
    walks them again and again cost about a tenth of the CPU of `diagnose` on a small profile."""
    from tpu_runtime.gc_pause import gc_paused

    with gc_paused():
        report = analyse(paths, top, compare, as_json)
        render(report, as_json=as_json, top=top, md=md, html=html)


def analyse(paths: Sequence[str], top: int, compare: str | None, as_json: bool) -> DiagnoseReport:
    """The diagnose job's report for `paths`, with the progress bar on stderr when it is a terminal and
    the report is not JSON. Input that cannot be read raises BadInputError before anything is printed."""
    from tpu_runtime.cli.blas_threads import one_blas_thread
    from tpu_runtime.cli.progress_bar import ProgressBar
    from tpu_runtime.diagnose.job import run_diagnose

    with (
        one_blas_thread(),
        ProgressBar(err, with_step=True, enabled=not as_json and err.is_terminal) as progress,
    ):
        return run_diagnose(paths, top, progress, compare=compare)


def render(
    report: DiagnoseReport, *, as_json: bool, top: int, md: Path | None = None, html: Path | None = None
) -> None:
    """The report on stdout (as JSON or for the terminal), and as Markdown or HTML files when asked."""
    if as_json:
        print_json(report)
    else:
        from tpu_runtime.cli.render.diagnose.terminal import render_diagnose_terminal

        render_diagnose_terminal(report, out, top=top)
    if md:
        from tpu_runtime.cli.render.diagnose.markdown import render_diagnose_markdown

        md.write_text(render_diagnose_markdown(report), encoding="utf-8")
        err.print(f"wrote {md}", highlight=False)
    if html:
        from tpu_runtime.cli.render.diagnose.html import render_diagnose_html

        html.write_text(render_diagnose_html(report), encoding="utf-8")
        err.print(f"wrote {html}", highlight=False)
