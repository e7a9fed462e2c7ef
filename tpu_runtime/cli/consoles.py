"""The terminal consoles every command prints through.

Rich takes the width of any terminal among stdin, stdout and stderr, or `$COLUMNS`; with none of them
(output to a file, CI, a pipe from a job with no terminal) it folds every line at 80 columns, so a
report written to a log was cut mid-sentence. There, these consoles use a width wide enough that lines
stay whole. The width is worked out at each print, as rich's own is, so `COLUMNS` set later still counts.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleDimensions

if TYPE_CHECKING:
    from pydantic import BaseModel

#: Width for output that reaches no terminal at all: wide enough that sentences and table rows stay whole.
UNBOUNDED_WIDTH = 240


def _any_terminal() -> bool:
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stream is not None and os.isatty(stream.fileno()):
                return True
        except (AttributeError, OSError, ValueError):
            continue
    return False


class _WideWhenNoTerminal(Console):
    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        columns = self._environ.get("COLUMNS", "")
        if self._width is None and not columns.isdigit() and not _any_terminal():
            return ConsoleDimensions(UNBOUNDED_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]


def make_console(stderr: bool = False, **options: Any) -> Console:
    """A console for stdout (or stderr) that folds lines only where a terminal or `$COLUMNS` says so."""
    return _WideWhenNoTerminal(stderr=stderr, **options)


def print_json(model: BaseModel) -> None:
    """A report as indented JSON on stdout (`--json`), past rich so that no width or markup touches it."""
    sys.stdout.write(json.dumps(model.model_dump(mode="json"), indent=2) + "\n")
