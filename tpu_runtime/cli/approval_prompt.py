"""Asking the person at this terminal about a run request that a job filed (onboard, kernel check/tune).

Jobs never approve anything: they hand the request they filed to the approver this module builds, which
shows everything the request would run (the same view as `tpu-agent run`) and records the person's yes
or no. A yes counts only with the passphrase of the person's approver key, read from the controlling
terminal (`/dev/tty`, never stdin, never an argument or a variable): a program that fakes a terminal
can type "yes" but does not know the passphrase. Without a terminal there is no approver, so the job
reports the request as waiting for `tpu-agent approvals approve ID` in the person's own terminal.
Imports typer and rich only (and the approver key module when a passphrase is typed).
"""

from __future__ import annotations

import os
import sys
import termios
from typing import TYPE_CHECKING, Protocol

import typer
from rich.markup import escape

from tpu_runtime.cli.consoles import make_console
from tpu_runtime.errors import Denied

if TYPE_CHECKING:
    from rich.progress import Progress

    from tpu_runtime.remote.approvals import Approval, RunRequest
    from tpu_runtime.remote.approver import UnlockedApprover
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.gated import Approver

__all__ = ["on_terminal", "read_passphrase", "tty_approver", "unlock_key"]

err = make_console(stderr=True, highlight=False)


class PausableProgress(Protocol):
    """A CLI progress bar that must stop drawing while the person reads and answers."""

    enabled: bool

    @property
    def bar(self) -> Progress: ...


def on_terminal() -> bool:
    """Approving needs a person: stdin and stderr on a TTY (a coding agent's shell tool has neither)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


class NoTerminal(Denied):
    """There is no controlling terminal to read a passphrase from."""


def read_passphrase(prompt: str) -> str:
    """One line typed on the controlling terminal with echo off; type-ahead is discarded first."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise NoTerminal("approving needs your terminal (there is no /dev/tty here)") from None
    with open(fd, "r+b", buffering=0) as tty:
        old = termios.tcgetattr(fd)
        quiet = list(old)
        quiet[3] &= ~termios.ECHO
        termios.tcsetattr(fd, termios.TCSAFLUSH, quiet)  # TCSAFLUSH drops input typed before the prompt
        try:
            tty.write(prompt.encode())
            line = b""
            while not line.endswith(b"\n"):
                chunk = tty.read(1)
                if not chunk:
                    break
                line += chunk
        finally:
            termios.tcsetattr(fd, termios.TCSAFLUSH, old)
            tty.write(b"\n")
    return line.decode(errors="replace").rstrip("\r\n")


def unlock_key(engine: RemoteEngine) -> UnlockedApprover:
    """Ask for the passphrase on the terminal and unlock the person's approver key.

    Raises ApproverError (wrong passphrase, no key) or NoTerminal, each with a one-line message.
    """
    from tpu_runtime.remote import approver

    key = approver.load_public(engine.approver_path)
    if key is None:
        raise approver.ApproverError(
            "no approver key yet: make one in your own terminal with `tpu-agent approver init`"
        )
    passphrase = read_passphrase(f"Passphrase for approver key {key.fingerprint}: ")
    return approver.unlock(engine.approver_path, passphrase)


def tty_approver(progress: PausableProgress | None = None) -> Approver | None:
    """An approver that asks on this terminal, or None when there is no terminal to ask on."""
    if not on_terminal():
        return None

    def ask(engine: RemoteEngine, request: RunRequest) -> Approval | None:
        from tpu_runtime.cli.render.run.terminal import render_request
        from tpu_runtime.remote.engine import whoami

        drawing = progress is not None and progress.enabled
        if drawing:
            assert progress is not None
            progress.bar.stop()
        try:
            from rich.text import Text

            from tpu_runtime.remote.shown import printable

            filer = printable(request.requested_by)
            err.print(Text.assemble((filer, "bold"), " needs to run this on a TPU:"))
            render_request(request, err)
            answer = typer.prompt("Run this exactly as shown? Type yes to approve", default="no", err=True)
        finally:
            if drawing:
                assert progress is not None
                progress.bar.start()
        from tpu_runtime.remote.approver import ApproverError

        who = whoami("tty-prompt")
        if answer.strip().lower() == "yes":
            try:
                key = unlock_key(engine)
            except (ApproverError, NoTerminal) as exc:
                err.print(f"[red]not approved[/]: {escape(str(exc))}", markup=True)
                return None
            return engine.approve(request.id, who, request.digest, via="tty-prompt", key=key)
        engine.deny(request.id, who, "declined at the prompt")
        return None

    return ask
