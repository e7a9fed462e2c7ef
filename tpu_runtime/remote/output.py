"""A running run's output kept in memory and read in pages, for front ends that answer "what did it
print since line N?" while the run goes on (the MCP runs server); a finished run's output is in its log
file (`RemoteEngine.logged_lines`). `RemoteEngine.output_page` pages either kind.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import anyio

from tpu_runtime.remote.report import (
    LoggedLine,
    OutputLine,
    RunEvent,
    RunResult,
    RunState,
    RunStatus,
    WorkerResult,
)
from tpu_runtime.remote.spec import places

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import RunRequest

logger = logging.getLogger(__name__)


class RemoteEngine(Protocol):
    """What this module needs of `engine.RemoteEngine` (which imports this module, so not the reverse)."""

    def stream(self, run_id: str) -> AsyncIterator[RunEvent]: ...

    def cancel(self, run_id: str) -> bool: ...

    def kept_output(self, run_id: str) -> RunOutput | None: ...

    def status(self, run_id: str) -> RunStatus | None: ...


MAX_KEPT_LINES = 100_000  # output lines kept in memory per run; older ones are dropped (the log file has all)
KEEP_RUNS = 50  # runs whose output an engine keeps in memory; older ones come back from their log file


@dataclass(frozen=True)
class OutputPage:
    """A page of a run's output: lines numbered from `first`, live (with their stream) or read back from
    the run's log file (`LoggedLine`, no stream)."""

    run_id: str
    state: RunState
    first: int
    lines: Sequence[OutputLine | LoggedLine]
    next_line: int
    done: bool  # the run has ended and every line has been returned
    dropped: int = 0  # lines no longer kept in memory before the page's start


def logged_page(run_id: str, state: RunState, logged: list[LoggedLine], since: int, limit: int) -> OutputPage:
    """A page of a finished (or elsewhere started) run's log file, from line `since`."""
    chosen = logged[since : since + limit]
    nxt = since + len(chosen) if chosen else max(since, len(logged))
    return OutputPage(
        run_id=run_id,
        state=state,
        first=since,
        lines=chosen,
        next_line=nxt,
        done=state != "running" and nxt >= len(logged),
    )


class RunOutput:
    """The output and result of one run, gathered from the engine's event stream.

    Lines are numbered from 0 in the order they arrived; once more than `max_lines` arrived, the oldest
    are dropped (`dropped` counts them) and a page starts at the first line still kept.
    """

    def __init__(self, run_id: str, request: RunRequest, max_lines: int = MAX_KEPT_LINES) -> None:
        self.run_id = run_id
        self.request = request
        self.max_lines = max_lines
        self.lines: list[OutputLine] = []
        self.dropped = 0
        self.workers: list[WorkerResult] = []
        self.result: RunResult | None = None
        self.done = False
        self.workers_total = places(request.spec)
        self._changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def total(self) -> int:
        """Lines that arrived so far, dropped ones included: the number the next line gets."""
        return self.dropped + len(self.lines)

    def _touch(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def follow(self, engine: RemoteEngine) -> None:
        """Gather the run's events until it ends; a failure keeps what arrived (its record has the rest)."""
        try:
            async for event in engine.stream(self.run_id):
                if isinstance(event, OutputLine):
                    self.lines.append(event)
                    if len(self.lines) > self.max_lines:
                        drop = len(self.lines) - self.max_lines
                        self.lines = self.lines[drop:]
                        self.dropped += drop
                elif isinstance(event, WorkerResult):
                    self.workers.append(event)
                elif isinstance(event, RunResult):
                    self.result = event
                self._touch()
        except Exception:  # keep what arrived; status then comes from the engine's record
            logger.exception("following run %s failed", self.run_id)
        finally:
            self.done = True
            self._touch()

    async def changed(self, timeout_s: float) -> None:
        """Return when something new arrives, the run ends, or `timeout_s` passes."""
        if self.done or timeout_s <= 0:
            return
        event = self._changed
        with anyio.move_on_after(timeout_s):
            await event.wait()

    def page(self, since: int, limit: int) -> tuple[int, list[OutputLine]]:
        """Up to `limit` lines from line `since` (or the first still kept): (first line's number, lines)."""
        start = max(since, self.dropped)
        return start, self.lines[start - self.dropped : start - self.dropped + limit]

    async def wait(
        self, wait_s: float, report: Callable[[float, str], Awaitable[None]], every_s: float = 0.5
    ) -> None:
        """Wait for the run to end (at most `wait_s`), calling `report(progress, message)` as lines and
        results arrive, at most once per `every_s` (progress counts lines and finished workers)."""
        deadline = time.monotonic() + wait_s
        sent = 0
        last_sent = 0.0
        while not self.done:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await self.changed(min(left, every_s))
            seen = self.total + len(self.workers)
            if seen > sent and (self.done or time.monotonic() - last_sent >= every_s):
                sent, last_sent = seen, time.monotonic()
                last = self.lines[-1].text[:120] if self.lines else ""
                message = f"{len(self.workers)}/{self.workers_total} workers done; {self.total} lines"
                await report(float(seen), f"{message}; last: {last}" if last else message)

    def state(self, engine: RemoteEngine) -> RunState:
        """The run's state: its result's, "running" until then, or the engine's record when following
        ended without a result."""
        if self.result is not None:
            return self.result.state
        if not self.done:
            return "running"
        stored = engine.status(self.run_id)
        return stored.state if stored is not None else "failed"

    def summary(self, engine: RemoteEngine) -> tuple[RunState, str]:
        """The run's state and a line saying how it went (failed workers' errors) or how to follow it."""
        state = self.state(engine)
        if state == "running":
            return state, (
                f"run {self.run_id} is still running: follow it with run_output(run_id={self.run_id!r}, "
                f"since_line={self.total}) or run_status, stop it with cancel_run"
            )
        failed = [w for w in self.workers if w.status != "ok"]
        message = f"run {self.run_id} {state}"
        if failed:
            message += "; " + "; ".join(w.failure for w in failed[:8])
        return state, message

    async def next_page(self, engine: RemoteEngine, since: int, limit: int, wait_s: float) -> OutputPage:
        """Up to `limit` lines from `since`, waiting up to `wait_s` for one when the run has none yet."""
        if since >= self.total and not self.done:
            await self.changed(wait_s)
        first, kept = self.page(since, limit)
        nxt = first + len(kept)
        return OutputPage(
            run_id=self.run_id,
            state=self.state(engine),
            first=first,
            lines=kept,
            next_line=nxt,
            done=self.done and nxt >= self.total,
            dropped=max(0, self.dropped - since),
        )

    def tail(self, count: int) -> tuple[int, list[OutputLine]]:
        """The last `count` lines kept: (first line's number, lines)."""
        chosen = self.lines[-count:] if count > 0 else []
        return self.total - len(chosen), chosen


CANCEL_WAIT_S = 30.0  # how long a stop waits for the run to end before answering


@dataclass(frozen=True)
class Stopped:
    """What asking a run to stop did: whether it was still running, its state after, and why."""

    run_id: str
    cancelled: bool
    state: RunState
    workers: list[WorkerResult]
    message: str


async def stop_run(engine: RemoteEngine, run_id: str, wait_s: float = CANCEL_WAIT_S) -> Stopped | str:
    """Stop a run this engine follows and wait up to `wait_s` for it to end; a string says why not
    (no such run, or one started by another process, which is stopped where it runs)."""
    output = engine.kept_output(run_id)
    if output is None:
        stored = engine.status(run_id)
        if stored is None:
            return f"no run {run_id!r}"
        if stored.state == "running":
            return (
                f"run {run_id} was not started by this server; stop it where it runs (Ctrl-C in the "
                "terminal that started it)"
            )
        return Stopped(run_id, False, stored.state, [], f"run {run_id} already ended")
    cancelled = engine.cancel(run_id)
    if output.task is not None:
        with anyio.move_on_after(wait_s):
            await asyncio.shield(output.task)
    state = output.state(engine)
    if not cancelled:
        message = f"run {run_id} had already ended ({state})"
    elif state == "running":
        message = f"run {run_id} was told to stop and has not ended within {wait_s:g} s"
    else:
        gone = [w.remote_stopped for w in output.workers]
        message = f"run {run_id} {state}"
        if gone and all(gone):
            message += "; the remote process is gone on every worker"
        elif any(g is False for g in gone):
            message += "; on some workers the remote process may still run (see workers)"
    return Stopped(run_id, cancelled, state, list(output.workers), message)
