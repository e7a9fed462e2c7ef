"""The terminal consoles every command prints through, and `--json` output past them.

A console is made when a command module is imported but built only when something first prints
through it: rich (about 0.03 s of CPU to import) is then loaded by the commands that print with it and
not by `--json` output. The console class itself, which keeps lines whole where no terminal folds
them, is in `tpu_runtime.cli.wide_console`.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console


class _ConsoleOnFirstUse:
    """Stands for a rich console and builds it, with the options given, when an attribute is first used."""

    __slots__ = ("_built", "_options")

    def __init__(self, options: dict[str, Any]) -> None:
        object.__setattr__(self, "_options", options)
        object.__setattr__(self, "_built", None)

    def _console(self) -> Console:
        built: Console | None = self._built
        if built is None:
            from tpu_runtime.cli.wide_console import WideWhenNoTerminal

            built = WideWhenNoTerminal(**self._options)
            object.__setattr__(self, "_built", built)
        return built

    def __getattr__(self, name: str) -> Any:
        return getattr(self._console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._console(), name, value)


def make_console(stderr: bool = False, **options: Any) -> Console:
    """A console for stdout (or stderr) that folds lines only where a terminal or `$COLUMNS` says so;
    rich is imported when it first prints."""
    return cast("Console", _ConsoleOnFirstUse({"stderr": stderr, **options}))


_err = make_console(stderr=True)


def print_error(message: str) -> None:
    """`error: MESSAGE` on stderr, the message printed as given (no markup, no highlighting): how the
    CLI's error boundary (`tpu_runtime.cli.boundary`) and the typer-free `diagnose` route report an error."""
    from rich.text import Text

    _err.print(Text.assemble(("error: ", "bold red"), message), highlight=False, soft_wrap=True)


def print_json(model: BaseModel) -> None:
    """A report as indented JSON on stdout (`--json`), past rich so that no width or markup touches it;
    a report on plain models (`tpu_runtime.model_base`) is written as pydantic would write it."""
    from tpu_runtime import model_base

    data = model_base.plain_dump(model) if model_base.PLAIN else model.model_dump(mode="json")
    sys.stdout.write(json.dumps(data, indent=2) + "\n")
