"""The rich building blocks every terminal renderer shares.

Whatever came from the user's files (op names, paths, log lines) goes in as `rich.text.Text`, never as
markup, so a `[bold]` inside it prints as typed.
"""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

__all__ = ["plain", "section_table"]


def plain(value: object, style: str = "") -> Text:
    """`value` as literal text (no markup parsed), in `style`."""
    return Text(str(value), style=style)


def section_table(title: str | None = None) -> Table:
    """The table style of a report section: a rule under the header, no outer frame, title on the left."""
    return Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False, show_edge=False)
