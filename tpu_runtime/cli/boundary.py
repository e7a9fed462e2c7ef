"""The CLI's one error boundary: a `TpuAgentError` from any command prints as one `error:` line on
stderr and ends the command with the error's exit code, so commands raise errors instead of each
picking its own exit code and printing it its own way.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from tpu_runtime.cli.consoles import print_error
from tpu_runtime.errors import TpuAgentError

__all__ = ["ErrorBoundary", "print_error"]


class ErrorBoundary(TyperGroup):
    """The root command group: runs a command and turns the suite's errors into exit codes."""

    def invoke(self, ctx: Any) -> Any:  # typer's own click Context (typer vendors click)
        try:
            return super().invoke(ctx)
        except TpuAgentError as exc:
            print_error(str(exc))
            raise typer.Exit(exc.exit_code) from None
