"""The rich console class every command prints through (built by `tpu_runtime.cli.consoles`).

Rich takes the width of any terminal among stdin, stdout and stderr, or `$COLUMNS`; with none of them
(output to a file, CI, a pipe from a job with no terminal) it folds every line at 80 columns, so a
report written to a log was cut mid-sentence. There, this console uses a width wide enough that lines
stay whole. The width is worked out at each print, as rich's own is, so `COLUMNS` set later still counts.
"""

from __future__ import annotations

import os
import sys

from rich.console import Console, ConsoleDimensions

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


class WideWhenNoTerminal(Console):
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
