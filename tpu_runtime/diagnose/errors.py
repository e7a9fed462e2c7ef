"""The one error type diagnose raises for input it cannot read; front ends print its message and exit 2."""

from __future__ import annotations

from tpu_runtime.errors import BadInput


class BadInputError(BadInput, ValueError):
    """An input that is empty, cut short, corrupt or of no kind diagnose knows; the message is one line."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = " ".join(reason.split())
        super().__init__(f"{path}: {self.reason}")
