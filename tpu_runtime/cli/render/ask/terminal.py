"""Knowledge-base replies on a terminal: an answer with its citation, a build report, the index status.

Quotes, sources and URLs come from indexed documents (some of them the user's own folder), so each is
escaped before it goes in as markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console

    from tpu_runtime.knowledge.models import Answer, BuildReport, KbStatus

__all__ = ["render_answer", "render_build", "render_status"]


def render_answer(reply: Answer, out: Console, err: Console) -> None:
    """The answer and its cited quote (and the close runner-up lines `ask` quoted beside it), or why the
    docs do not cover it; then the passages found."""
    if reply.covered:
        labels = ["[bold green]Answer[/]"] + ["[green]Also close[/]"] * (len(reply.citations) - 1)
        for label, citation in zip(labels, reply.citations, strict=True):
            out.print(f"{label} ({escape(citation.source)})", highlight=False)
            out.print(f"  “{escape(citation.quote)}”", highlight=False, soft_wrap=True)
            if citation.url:
                out.print(f"  source: {escape(citation.url)}", highlight=False)
            if citation.checked:
                out.print(f"  checked: {citation.checked}", highlight=False)
    else:
        out.print(f"[bold yellow]Not covered[/]: {escape(reply.reason)}", highlight=False, soft_wrap=True)
        out.print(f"  closest page to read: {escape(reply.closest or '-')}", highlight=False)
    if reply.passages:
        table = Table(title="passages", title_justify="left", show_lines=False)
        table.add_column("#", justify="right")
        table.add_column("score", justify="right")
        table.add_column("source", overflow="fold")
        table.add_column("url", overflow="fold")
        for rank, passage in enumerate(reply.passages, 1):
            table.add_row(
                str(rank), f"{passage.score:.4f}", escape(passage.source), escape(passage.url or "")
            )
        out.print(table)
    for note in reply.notes:
        err.print(f"[dim]note: {escape(note)}[/]", highlight=False, soft_wrap=True)


def render_build(report: BuildReport, out: Console, err: Console) -> None:
    """What a build or `kb add` indexed and embedded; what it skipped or warned about on stderr."""
    vectors = (
        "vectors complete" if report.dense_ready else "vectors incomplete (lexical search covers the rest)"
    )
    out.print(
        f"index {escape(report.index_dir)}: {report.chunks} passages, {vectors}, {report.seconds:.1f} s",
        highlight=False,
    )
    for label, items in (
        ("indexed", report.indexed),
        ("embedded", report.embedded),
        ("removed", report.removed),
    ):
        if items:
            out.print(f"  {label}: {escape(', '.join(items))}", highlight=False, soft_wrap=True)
    for item in report.skipped:
        err.print(f"[yellow]skipped[/] {escape(item)}", highlight=False, soft_wrap=True)
    for item in report.problems:
        err.print(f"[yellow]warning[/] {escape(item)}", highlight=False, soft_wrap=True)


def _status_rows(status: KbStatus) -> Iterator[tuple[str, str, str, str]]:
    stale, missing = set(status.stale), set(status.missing)
    for unit in status.units:
        state = "stale" if unit.unit in stale else "ok"
        yield unit.label, str(unit.chunks), "yes" if unit.dense_done else "no", state
    for name in sorted(missing):
        yield name, "-", "-", "not indexed"


def render_status(result: KbStatus, out: Console, err: Console) -> None:
    """The index, its model and one row per source with its passage count, vectors and freshness."""
    out.print(f"index: {escape(result.index_dir)} ({result.size_bytes / 2**20:.1f} MiB)", highlight=False)
    if result.model:
        out.print(
            f"model: {escape(result.model)} sha256 {escape((result.model_sha256 or '')[:16])}…",
            highlight=False,
        )
    lexical = "ready" if result.lexical_ready else "missing"
    dense = "ready" if result.dense_ready else "incomplete"
    out.print(
        f"passages: {result.chunks} (vectors for {result.dense_chunks}); lexical {lexical}, dense {dense}",
        highlight=False,
    )
    table = Table(show_lines=False)
    for column in ("source", "passages", "vectors", "state"):
        table.add_column(column)
    for row in _status_rows(result):
        table.add_row(*(escape(cell) for cell in row))
    if result.units or result.missing:
        out.print(table)
    for problem in result.problems:
        err.print(f"[yellow]note[/] {escape(problem)}", highlight=False, soft_wrap=True)
