"""What a run reports: output lines as they arrive, each worker's result, and the run's result.

Front ends render these and nothing else: the CLI prints lines with a worker prefix and a table of
results; MCP tools return them as structured output.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

ErrorKind = Literal[
    "refused",  # nothing listens on the worker's SSH port
    "timeout",  # connecting took longer than the connect timeout
    "unreachable",  # no route, DNS failure, or another network error before SSH started
    "auth",  # the worker rejected our key
    "host_key",  # the worker's host key is not the pinned one
    "gate",  # the worker's gate refused to start the command (approval, key, upload or path check)
    "connection_lost",  # the connection dropped while the command ran
    "time_limit",  # the command ran past its time limit and was stopped
    "setup",  # the run folder could not be made, or an upload/download failed
    "cancelled",  # stopped on request
    "exit",  # the command ran and exited non-zero
]
WorkerStatus = Literal["ok", "failed", "cancelled"]
RunState = Literal["running", "succeeded", "failed", "cancelled", "interrupted"]


class OutputLine(BaseModel):
    """One line of a worker's stdout or stderr, without its newline."""

    type: Literal["line"] = "line"
    run_id: str
    worker: int
    worker_name: str
    stream: Literal["stdout", "stderr"]
    text: str

    def prefixed(self) -> str:
        """The line as the run's log file and the CLI show it; `parse_prefixed` reads it back."""
        return f"[{self.worker}:{self.worker_name}] {self.text}"


_PREFIXED = re.compile(r"^\[(-?\d+):([^\]]*)\] ?(.*)$")


class LoggedLine(NamedTuple):
    """A line read back from a run's log file; worker -1 for a line without a worker prefix."""

    worker: int
    worker_name: str
    text: str


def parse_prefixed(line: str) -> LoggedLine:
    """The inverse of `OutputLine.prefixed` (a line in another shape is kept whole, worker -1)."""
    match = _PREFIXED.match(line)
    if match is None:
        return LoggedLine(-1, "", line)
    return LoggedLine(int(match.group(1)), match.group(2), match.group(3))


class WorkerResult(BaseModel):
    """How one worker's command ended."""

    type: Literal["worker"] = "worker"
    run_id: str
    worker: int
    worker_name: str
    host: str
    status: WorkerStatus
    exit_status: int | None = None
    signal: str | None = None
    error_kind: ErrorKind | None = None
    error: str | None = Field(default=None, description="one line saying what went wrong")
    duration_s: float
    stdout_sha256: str
    stderr_sha256: str
    stdout_lines: int = 0
    stderr_lines: int = 0
    downloads: list[str] = Field(default_factory=list, description="local paths fetched back")
    remote_stopped: bool | None = Field(
        default=None, description="after a cancel or time limit: whether the remote process group is gone"
    )

    @property
    def failure(self) -> str:
        """How this worker failed, as one line for a report (meant for a worker whose status is not ok)."""
        return f"worker {self.worker} ({self.worker_name}): {self.error_kind}: {self.error}"


class RunResult(BaseModel):
    """The end of a run: every worker's result and the overall state."""

    type: Literal["result"] = "result"
    run_id: str
    request_id: str
    state: RunState
    duration_s: float
    workers: list[WorkerResult]
    attempt: int = 0

    @property
    def ok(self) -> bool:
        return self.state == "succeeded"


class RunStatus(BaseModel):
    """Where a run stands, for `status(run_id)` while it runs and after."""

    run_id: str
    request_id: str
    state: RunState
    started_at: float
    finished_at: float | None = None
    lines: int = 0
    workers_done: int = 0
    workers_total: int = 0
    result: RunResult | None = None


RunEvent = OutputLine | WorkerResult | RunResult
