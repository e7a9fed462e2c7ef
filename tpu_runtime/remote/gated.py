"""A job's remote step through the approval path: reuse an earlier request, ask, run, say what happened.

Jobs that need a real TPU (onboarding's device numerics, kernel timing and tuning) describe the work as a
`RemoteWork` (command or loop plan, uploads, downloads, environment, time limit) and call `settle`:

1. An earlier request for exactly the same work on the same target is reused when it can still be used
   (pending and unexpired, approved with a usable approval, a loop whose runner is gone, or finished
   successfully). So a person who approved it with `tpu-agent approvals approve ID` in their own terminal,
   or a run that already finished, is not asked twice; the job simply runs again and picks it up.
2. Otherwise a new request is filed (never auto-approved by policy: it runs user code).
3. A pending request goes to the front end's `Approver`, which shows it to the person and records their
   yes or no. Nothing in this module approves; without an approver the request stays pending.
4. An approved request runs (the engine checks digest, single use, expiry and upload hashes), and the
   outcome says which of waiting / denied / busy / ran / failed it came to.

A workflow step with `gate: approval` does not call `settle` itself: it returns a `GatedRun` (the work
and what to do with each outcome), and the workflow runner passes it through `pass_gate`, which hands the
step an `ApprovalPending` instead of a result when the person has not approved (or denied) it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tpu_runtime.errors import BadInput, PendingApproval
from tpu_runtime.remote.approvals import ApprovalError, RunRequest
from tpu_runtime.remote.confine import PathEscapeError, safe_relative
from tpu_runtime.remote.report import OutputLine, RunResult
from tpu_runtime.remote.spec import LoopPlan, RunSpec, SpecError, plan_uploads
from tpu_runtime.remote.staging import staged_script
from tpu_runtime.remote.targets import TargetError
from tpu_runtime.remote.tpu_api import TpuApiError

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import Approval
    from tpu_runtime.remote.engine import RemoteEngine

__all__ = [
    "ApprovalPending",
    "Approver",
    "GateError",
    "GateOutcome",
    "GatedRun",
    "RemoteWork",
    "approval_time",
    "doubled_names",
    "fetched",
    "file_request",
    "find_reusable",
    "pass_gate",
    "read_fetched",
    "settle",
    "settle_now",
    "staged_script",
    "worker_command_inputs",
    "worker_names",
]

Approver = Callable[["RemoteEngine", RunRequest], "Approval | None"]
"""Front-end hook: show the request to the person; on their yes call `engine.approve` and return the
approval, on their no call `engine.deny` and return None (or None to leave it pending)."""

GateState = Literal["waiting", "denied", "busy", "ran", "failed"]
REUSABLE_STATES = ("pending", "approved", "running", "finished")
T = TypeVar("T")
R = TypeVar("R")


class GateError(BadInput):
    """The request could not be filed (unknown target, GKE target, a missing file); one line."""


class RemoteWork(BaseModel):
    """What a job wants run on a target's workers, before it is a request."""

    model_config = ConfigDict(frozen=True)

    command: tuple[str, ...] = Field(min_length=1, description="argv, run in the run's files folder")
    uploads: tuple[tuple[str, str], ...] = Field(description="(local absolute path, destination) pairs")
    downloads: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    time_limit_s: float = Field(gt=0, description="per run; per attempt for a loop")
    loop: LoopPlan | None = None


def worker_command_inputs(out_dir: str, python: str, folder: str, error: type[Exception]) -> str:
    """Check two inputs of a job's worker command before it becomes `RemoteWork`: `out_dir` must stay
    inside the run's files folder (returned normalised; `folder` names it in the message) and `python`
    be one interpreter name or path. Raises `error` with one line."""
    try:
        out = safe_relative(out_dir)
    except PathEscapeError as exc:
        raise error(str(exc).replace("upload destination", folder)) from None
    if not python or any(ch.isspace() for ch in python):
        raise error(f"python must be one interpreter name or path; got {python!r}")
    return out


def doubled_names(names: Sequence[str]) -> list[str]:
    """The names that more than one upload or folder would take in the run's files folder, sorted."""
    return sorted({name for name in names if names.count(name) > 1})


class GateOutcome(BaseModel):
    """Where the work stands after `settle`, and the run's result when it ran (now or before)."""

    state: GateState
    request: RunRequest
    result: RunResult | None = None
    note: str = Field(default="", description="why it failed before running, when it did")

    @property
    def approve_hint(self) -> str:
        return f"approve with `tpu-agent approvals approve {self.request.id}`"

    @property
    def denied_text(self) -> str:
        """'denied: request ID was denied by WHO' (the person's name when the request records it)."""
        by = f" by {self.request.decided_by}" if self.request.decided_by else ""
        return f"denied: request {self.request.id} was denied{by}"

    @property
    def worker_failures(self) -> list[str]:
        """One line per worker of the run that did not end ok (none when nothing ran)."""
        if self.result is None:
            return []
        return [w.failure for w in self.result.workers if w.status != "ok"]


class ApprovalPending(PendingApproval):
    """The work did not run: its request waits for the person, was denied, or runs elsewhere."""

    def __init__(self, outcome: GateOutcome) -> None:
        request = outcome.request
        if outcome.state == "waiting":
            text = f"waiting for approval: request {request.id} ({outcome.approve_hint})"
        elif outcome.state == "denied":
            text = outcome.denied_text
        else:
            text = f"request {request.id} is running elsewhere"
        super().__init__(text)
        self.outcome = outcome


@dataclass
class GatedRun:
    """What a workflow step with `gate: approval` asks the runner to run, and how it takes the outcome.

    `finish` gets the outcome of work that ran (now or earlier); `refused` gets `ApprovalPending` (not
    approved) or `GateError` (the request could not be filed). Without `refused` those propagate.
    """

    engine: RemoteEngine
    target: str
    work: RemoteWork
    finish: Callable[[GateOutcome], None]
    refused: Callable[[ApprovalPending | GateError], None] | None = None
    workers: str = "all"
    requested_by: str = "tpu-agent"
    on_line: Callable[[OutputLine], None] | None = None


def pass_gate(run: GatedRun, approver: Approver | None = None) -> None:
    """Settle the run's request (`settle`) and hand the step its outcome; nothing runs unapproved."""
    try:
        outcome = settle(
            run.engine,
            run.target,
            run.work,
            approver=approver,
            workers=run.workers,
            requested_by=run.requested_by,
            on_line=run.on_line,
        )
        if outcome.state in ("waiting", "denied", "busy"):
            raise ApprovalPending(outcome)
    except (ApprovalPending, GateError) as exc:
        if run.refused is None:
            raise
        run.refused(exc)
        return
    run.finish(outcome)


def settle_now(make: Callable[[Callable[[T], None]], GatedRun | None], approver: Approver | None = None) -> T:
    """A gated step run outside a workflow: `make(done)` builds its `GatedRun` (or calls `done` at once and
    returns None when there is nothing to run); the run passes the gate and what `done` got is returned."""
    found: list[T] = []
    run = make(found.append)
    if run is not None:
        pass_gate(run, approver)
    return found[0]


def _wanted_workers(which: str) -> list[int] | None:
    if which == "all":
        return None
    return sorted({int(part) for part in which.split(",") if part.strip().isdigit()})


def _matches(
    spec: RunSpec, target: str, work: RemoteWork, uploads: list[tuple[str, str]], which: str
) -> bool:
    from tpu_runtime.remote.ray_jobs import LAUNCHER_NAME

    wanted = _wanted_workers(which)
    ours = {LAUNCHER_NAME} if spec.ray is not None else set()  # added by the engine, not by the job
    return (
        spec.target == target
        and spec.loop == work.loop
        and (work.loop is not None or spec.command == work.command)
        and spec.env == work.env
        and [(u.dest, u.sha256) for u in spec.uploads if u.dest not in ours] == uploads
        and [d.remote for d in spec.downloads] == list(work.downloads)
        and spec.time_limit_s == work.time_limit_s
        and (wanted is None or [w.index for w in spec.workers] == wanted)
    )


def find_reusable(
    engine: RemoteEngine, target: str, work: RemoteWork, workers: str = "all"
) -> RunRequest | None:
    """The newest earlier request for exactly this work (same files by hash) that can still be used."""
    try:
        planned = plan_uploads([(Path(source), dest) for source, dest in work.uploads])
    except SpecError as exc:
        raise GateError(str(exc)) from None
    uploads = [(u.dest, u.sha256) for u in planned]
    now = engine.clock()
    for request in reversed(engine.list_requests(REUSABLE_STATES)):
        if not _matches(request.spec, target, work, uploads, workers):
            continue
        if request.state == "pending" and request.expires_at <= now:
            continue
        if request.state == "approved" and engine.approval_for(request.id) is None:
            continue  # its approval expired unused: the person must be asked again
        if request.state == "finished" and not _finished_ok(engine, request):
            continue  # a failed run is worth a fresh request, not a replay of its failure
        return request
    return None


def _stored_result(engine: RemoteEngine, request: RunRequest) -> RunResult | None:
    from tpu_runtime.remote.runs import run_for_request

    run_id = run_for_request(engine.store, request.id)
    status = engine.status(run_id) if run_id else None
    return status.result if status else None


def _finished_ok(engine: RemoteEngine, request: RunRequest) -> bool:
    if request.spec.loop is not None:
        return True  # a loop's attempts are judged one by one by the job
    result = _stored_result(engine, request)
    return result is not None and result.ok


def file_request(
    engine: RemoteEngine,
    target: str,
    work: RemoteWork,
    *,
    workers: str = "all",
    requested_by: str = "tpu-agent",
) -> RunRequest:
    """File the work as a new request, pending the person's approval. Raises GateError (one line)."""
    try:
        return engine.request_run(
            target,
            list(work.command),
            workers=workers,
            env=dict(work.env),
            uploads=[(Path(source), dest) for source, dest in work.uploads],
            downloads=list(work.downloads),
            time_limit_s=work.time_limit_s,
            loop=work.loop,
            requested_by=requested_by,
            use_policy=False,
        )
    except (TargetError, SpecError, TpuApiError) as exc:
        raise GateError(str(exc)) from None


async def _run(
    engine: RemoteEngine,
    start: Callable[[], Awaitable[str]],
    on_line: Callable[[OutputLine], None] | None,
) -> RunResult:
    try:
        run_id = await start()
        async for event in engine.stream(run_id):
            if isinstance(event, OutputLine) and on_line is not None:
                on_line(event)
        return await engine.wait(run_id)
    finally:
        await engine.aclose()


def settle(
    engine: RemoteEngine,
    target: str,
    work: RemoteWork,
    *,
    approver: Approver | None = None,
    workers: str = "all",
    requested_by: str = "tpu-agent",
    on_line: Callable[[OutputLine], None] | None = None,
    resume_loops: bool = False,
) -> GateOutcome:
    """Reuse or file the request, let the person decide, and run it once approved.

    `resume_loops`: carry on a loop left `running` by a runner that is gone (only a caller that knows no
    other runner can be working on it, e.g. one holding the tuning run's lock). Raises GateError when the
    request cannot be filed.
    """
    request = find_reusable(engine, target, work, workers) or file_request(
        engine, target, work, workers=workers, requested_by=requested_by
    )
    if request.state == "finished":
        return GateOutcome(state="ran", request=request, result=_stored_result(engine, request))
    if request.state == "running":
        if request.spec.loop is None or not resume_loops:
            return GateOutcome(state="busy", request=request)
        rid = request.id
        try:
            result = asyncio.run(_run(engine, lambda: engine.resume_loop(rid, actor=requested_by), on_line))
        except ApprovalError as exc:  # the loop changed, or never opened: nothing more runs under it
            return GateOutcome(state="failed", request=engine.get_request(rid), note=str(exc))
        return _ran(engine, request.id, result)
    approval = engine.approval_for(request.id)
    if approval is None and approver is not None and request.state == "pending":
        approval = approver(engine, request)
    if approval is None:
        request = engine.get_request(request.id)
        return GateOutcome(state="denied" if request.state == "denied" else "waiting", request=request)
    chosen = approval
    try:
        result = asyncio.run(_run(engine, lambda: engine.start(chosen, actor=requested_by), on_line))
    except ApprovalError as exc:  # an upload changed after approval, or the approval was used meanwhile
        return GateOutcome(state="failed", request=engine.get_request(request.id), note=str(exc))
    return _ran(engine, request.id, result)


def _ran(engine: RemoteEngine, request_id: str, result: RunResult) -> GateOutcome:
    state: GateState = "ran" if result.ok else "failed"
    return GateOutcome(state=state, request=engine.get_request(request_id), result=result)


def fetched(state_path: Path, request: RunRequest, attempt: int = 0) -> dict[int, Path]:
    """Worker index -> the first download's local folder, for workers that brought it back."""
    if not request.spec.downloads:
        return {}
    root = state_path / "downloads" / request.id / (f"a{attempt}" if attempt else "")
    name = Path(request.spec.downloads[0].remote.rstrip("/")).name
    found: dict[int, Path] = {}
    for index, _name in _workers(request):
        path = root / f"w{index}" / name
        if path.exists():
            found[index] = path
    return found


def read_fetched(
    state_path: Path,
    request: RunRequest,
    read: Callable[[Path, int], R],
    error: type[Exception],
    attempt: int = 0,
) -> tuple[dict[int, R], list[str]]:
    """`read(folder, index)` of each worker's fetched folder (`fetched`), and 'worker N: why' for each
    one that raised `error` (other errors propagate)."""
    found: dict[int, R] = {}
    problems: list[str] = []
    for index, folder in fetched(state_path, request, attempt).items():
        try:
            found[index] = read(folder, index)
        except error as exc:
            problems.append(f"worker {index}: {exc}")
    return found, problems


def _workers(request: RunRequest) -> list[tuple[int, str]]:
    """(index, name) of each place the work ran: SSH workers, or a Ray job's hosts (one task each)."""
    job = request.spec.ray
    if job is not None:
        return [(i, f"{job.submission_id}/w{i}") for i in range(job.hosts)]
    return [(w.index, w.name) for w in request.spec.workers]


def approval_time(request: RunRequest) -> str:
    """When the person decided, as UTC text ('unknown' if the request carries no decision time)."""
    if request.decided_at is None:
        return "unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(request.decided_at))


def worker_names(request: RunRequest, indices: list[int] | None = None) -> str:
    """'0:w0, 1:w1' for the request's workers (or the given subset of them)."""
    chosen = [(i, name) for i, name in _workers(request) if indices is None or i in indices]
    return ", ".join(f"{i}:{name}" for i, name in chosen) or "none"
