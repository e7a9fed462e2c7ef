"""The terminal consoles every command prints through.

Rich wraps at 80 columns whenever its stream is not a terminal, so `tpu-agent ... | tee log` or a pipe
into `less` got reports folded mid-sentence. Piped output uses the width of the terminal the person is
looking at (stderr or stdin is often still one), `$COLUMNS` when set, and otherwise a width wide
enough that nothing wraps.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

#: Width for output that reaches no terminal at all (a file, CI): wide enough that table rows stay whole.
UNBOUNDED_WIDTH = 240


def _piped_width() -> int:
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    for stream in (sys.stderr, sys.stdin, sys.stdout):
        try:
            if stream is not None and stream.isatty():
                return os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError):
            continue
    return UNBOUNDED_WIDTH


def make_console(stderr: bool = False, **options: Any) -> Console:
    """A console for stdout (or stderr) that wraps only where a terminal would."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        interactive = stream.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        options.setdefault("width", _piped_width())
        options.setdefault("soft_wrap", True)
    return Console(stderr=stderr, **options)
