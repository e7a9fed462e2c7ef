"""The suite's one error tree: every error raised on purpose says what went wrong in one line and which
exit code the CLI ends with, so each front end needs one boundary instead of a list of classes.

Kinds, by the exit code the CLI ends with:

- `TpuAgentError` (1): a job that could not be done (a failed model, an unusable index, a lost worker);
- `ExternalError` (1): a tool or service outside the suite failed (Cloud TPU API, kubectl, Ray, an LLM API);
- `BadInput` (2): the caller asked for something that cannot be done as asked (a missing file, a bad
  option, an unknown target); nothing ran;
- `PendingApproval` (3): a request waits for the person's decision;
- `Denied` (4): the person, a key or a rule refused it.

Module-specific classes (`TargetError`, `SpecError`, ...) keep their names and subclass one kind; those
that were a `ValueError` or `RuntimeError` stay one, so older `except ValueError` blocks still catch them.
Control-flow exceptions (`StopCapture`, the LLM loop's turn limit) and the standard-library-only worker
gate and hook scripts stay outside the tree on purpose.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_PENDING = 3
EXIT_DENIED = 4


class TpuAgentError(Exception):
    """Base of every error the suite raises on purpose; `message` is one line, `exit_code` the CLI's."""

    exit_code: ClassVar[int] = EXIT_FAILED

    def __init__(self, message: str = "", *args: object) -> None:
        super().__init__(message, *args)
        self.message = message


class ExternalError(TpuAgentError):
    """A tool or service outside the suite failed; the message says which and what to do."""


class BadInput(TpuAgentError):
    """The caller asked for something that cannot be done as asked; nothing ran."""

    exit_code: ClassVar[int] = EXIT_BAD_INPUT


class PendingApproval(TpuAgentError):
    """The request waits for the person's approval."""

    exit_code: ClassVar[int] = EXIT_PENDING


class Denied(TpuAgentError):
    """The person, their key or a signed rule refused it."""

    exit_code: ClassVar[int] = EXIT_DENIED
