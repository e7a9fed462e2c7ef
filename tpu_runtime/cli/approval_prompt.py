"""Asking the person at this terminal about a run request that a job filed (onboard, kernel check/tune).

Jobs never approve anything: they hand the request they filed to the approver this module builds, which
shows everything the request would run (the same view as `tpu-agent run`) and records the person's yes
or no. Without a terminal there is no approver, so the job reports the request as waiting for
`tpu-agent approvals approve ID` in the person's own terminal. Imports typer and rich only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

import typer
from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress

    from tpu_runtime.remote.approvals import Approval, RunRequest
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.gated import Approver

__all__ = ["on_terminal", "tty_approver"]

err = Console(stderr=True, highlight=False)


class PausableProgress(Protocol):
    """A CLI progress bar that must stop drawing while the person reads and answers."""

    enabled: bool
    bar: Progress


def on_terminal() -> bool:
    """Approving needs a person: stdin and stderr on a TTY (a coding agent's shell tool has neither)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def tty_approver(progress: PausableProgress | None = None) -> Approver | None:
    """An approver that asks on this terminal, or None when there is no terminal to ask on."""
    if not on_terminal():
        return None

    def ask(engine: RemoteEngine, request: RunRequest) -> Approval | None:
        from tpu_runtime.cli.run_cmd import render_request
        from tpu_runtime.remote.engine import whoami

        drawing = progress is not None and progress.enabled
        if drawing:
            assert progress is not None
            progress.bar.stop()
        try:
            err.print(f"[bold]{request.requested_by}[/] needs to run this on a TPU:")
            render_request(request, err)
            answer = typer.prompt("Run this exactly as shown? Type yes to approve", default="no", err=True)
        finally:
            if drawing:
                assert progress is not None
                progress.bar.start()
        who = whoami("tty-prompt")
        if answer.strip().lower() == "yes":
            return engine.approve(request.id, who, request.digest, via="tty-prompt")
        engine.deny(request.id, who, "declined at the prompt")
        return None

    return ask
