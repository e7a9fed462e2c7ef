"""The remote-execution API the CLI and the MCP servers call.

    engine = RemoteEngine()
    request = engine.request_run("my-v6e", ["python", "train.py"], uploads=[(Path("train.py"), None)])
    # show request.spec to the person; on their yes (CLI prompt, MCP elicitation, or
    # `tpu-agent approvals approve ID` in their terminal):
    approval = engine.approve(request.id, approver="alice@tty", digest=request.digest)
    async for event in engine.execute(approval):   # OutputLine / WorkerResult / RunResult
        ...
    engine.cancel(run_id); engine.status(run_id)

There is deliberately no way to approve from a model: `approve` is called by front-end code after the
person answered, never exposed as a tool. Policy-approved read-only commands come back from
`request_run` already approved (approver `policy:...`).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from tpu_runtime.remote import approvals as ap
from tpu_runtime.remote import audit, loops, runs
from tpu_runtime.remote.approvals import Approval, ApprovalError, RunRequest
from tpu_runtime.remote.locations import policy_file, state_db, state_dir, targets_file
from tpu_runtime.remote.policy import auto_approval_rule, load_policy
from tpu_runtime.remote.report import OutputLine, RunEvent, RunResult, RunState, RunStatus, WorkerResult
from tpu_runtime.remote.spec import (
    Download,
    LoopPlan,
    RunSpec,
    SpecError,
    file_sha256,
    plan_uploads,
    spec_digest,
)
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.targets import (
    GkeTarget,
    HostsTarget,
    TargetError,
    TpuVmTarget,
    get_target,
    load_targets,
    resolve_workers,
    select_workers,
)
from tpu_runtime.remote.tpu_api import TpuApi
from tpu_runtime.remote.wrap import build_script

MAX_BUFFERED_EVENTS = 20_000  # output lines kept in memory per run for late readers; the log file has all


class _RunHandle:
    """A run in this process: its events so far, who waits for more, and its cancel switch."""

    def __init__(
        self, run_id: str, request_id: str, workers_total: int, started_at: float, log: Path
    ) -> None:
        self.run_id = run_id
        self.request_id = request_id
        self.workers_total = workers_total
        self.started_at = started_at
        self.events: list[RunEvent] = []
        self.dropped = 0
        self.lines = 0
        self.workers_done = 0
        self.cancel = asyncio.Event()
        self.done = False
        self.result: RunResult | None = None
        self.finished_at: float | None = None
        self.task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        log.parent.mkdir(parents=True, exist_ok=True)
        self.log = log.open("a", encoding="utf-8")

    def emit(self, event: RunEvent) -> None:
        if isinstance(event, OutputLine):
            self.lines += 1
            self.log.write(f"{event.prefixed()}\n")
        elif isinstance(event, WorkerResult):
            self.workers_done += 1
        self.events.append(event)
        if len(self.events) > MAX_BUFFERED_EVENTS:
            drop = len(self.events) - MAX_BUFFERED_EVENTS
            self.events = self.events[drop:]
            self.dropped += drop
        self._changed.set()
        self._changed = asyncio.Event()

    def close(self, result: RunResult, finished_at: float) -> None:
        self.result = result
        self.finished_at = finished_at
        self.done = True
        self.log.close()
        self._changed.set()

    async def follow(self) -> AsyncIterator[RunEvent]:
        seen = self.dropped
        while True:
            changed = self._changed
            start = max(0, seen - self.dropped)
            batch = self.events[start:]
            seen = self.dropped + len(self.events)
            for event in batch:
                yield event
            if self.done and seen == self.dropped + len(self.events):
                return
            await changed.wait()


class RemoteEngine:
    """Requests, approvals, runs, loops and the audit log over one state file."""

    def __init__(
        self,
        *,
        store: Store | None = None,
        targets_path: Path | None = None,
        policy_path: Path | None = None,
        state_path: Path | None = None,
        tpu_api: TpuApi | None = None,
        clock: Callable[[], float] = time.time,
        connect_timeout_s: float | None = None,
    ) -> None:
        self.store = store or Store(state_db())
        self.targets_path = targets_path or targets_file()
        self.policy_path = policy_path or policy_file()
        self.state_path = state_path or state_dir()
        self.tpu_api = tpu_api
        self.clock = clock
        self.connect_timeout_s = connect_timeout_s
        self._runs: dict[str, _RunHandle] = {}
        self._pool: object | None = None

    # ---- targets -------------------------------------------------------------------------------------
    def targets(self) -> dict[str, HostsTarget | TpuVmTarget | GkeTarget]:
        return load_targets(self.targets_path)

    def target(self, name: str) -> HostsTarget | TpuVmTarget | GkeTarget:
        return get_target(self.targets_path, name)

    # ---- requests and decisions ------------------------------------------------------------------------
    def request_run(
        self,
        target: str,
        command: Sequence[str],
        *,
        workers: str = "all",
        env: dict[str, str] | None = None,
        uploads: Sequence[tuple[Path, str | None]] = (),
        downloads: Sequence[str] = (),
        time_limit_s: float = 600.0,
        loop: LoopPlan | None = None,
        requested_by: str = "cli",
        use_policy: bool = True,
    ) -> RunRequest:
        """Build the spec (resolving workers and pinning their host keys), store it pending, audit it.

        Raises TargetError or SpecError with a one-line message when the request cannot be built.
        """
        if loop is not None:
            command = loop.attempts[0]
        if not command:
            raise SpecError("no command given (put it after --)")
        request_id = ap.new_id("r")
        chosen = self.target(target)
        env = dict(env or {})
        try:
            if isinstance(chosen, GkeTarget):
                from tpu_runtime.remote.gke import build_manifest

                if uploads or downloads or loop is not None:
                    raise SpecError(
                        "GKE targets take a command and environment only (bake files into the image)"
                    )
                workload = build_manifest(chosen, request_id, tuple(command), env, time_limit_s)
                spec = RunSpec(
                    target=target,
                    target_kind="gke",
                    command=tuple(command),
                    env=env,
                    time_limit_s=time_limit_s,
                    remote_dir="",
                    gke=workload,
                )
            else:
                resolved = select_workers(resolve_workers(chosen, self.tpu_api), workers)
                spec = RunSpec(
                    target=target,
                    target_kind=chosen.kind,
                    workers=resolved,
                    command=tuple(command),
                    env=env,
                    uploads=plan_uploads(list(uploads)),
                    downloads=tuple(Download(remote=d) for d in downloads),
                    time_limit_s=time_limit_s,
                    remote_dir=chosen.remote_dir,
                    script=build_script(
                        remote_dir=chosen.remote_dir, run_key=request_id, env=env, time_limit_s=time_limit_s
                    ),
                    identity_file=chosen.identity_file,
                    loop=loop,
                )
        except ValueError as exc:
            if isinstance(exc, SpecError | TargetError):
                raise
            raise SpecError(str(exc).splitlines()[-1].strip()) from None
        request = ap.create_request(self.store, spec, requested_by, self.clock(), request_id=request_id)
        rule = auto_approval_rule(spec, load_policy(self.policy_path)) if use_policy else None
        if rule:
            ap.approve(self.store, request.id, rule, request.digest, via="policy", now=self.clock())
            request = ap.get_request(self.store, request.id)
        return request

    def get_request(self, request_id: str) -> RunRequest:
        return ap.get_request(self.store, request_id)

    def list_requests(self, states: tuple[str, ...] = ()) -> list[RunRequest]:
        return ap.list_requests(self.store, states)

    def approve(self, request_id: str, approver: str, digest: str, via: str = "cli") -> Approval:
        """Record the person's yes. Call only after the person answered; never expose this as a tool."""
        return ap.approve(self.store, request_id, approver, digest, via, self.clock())

    def deny(self, request_id: str, approver: str, reason: str = "") -> RunRequest:
        return ap.deny(self.store, request_id, approver, reason, self.clock())

    def approval_for(self, request_id: str) -> Approval | None:
        """The usable approval of a request, e.g. after the person ran `tpu-agent approvals approve`."""
        return ap.usable_approval(self.store, request_id, self.clock())

    # ---- running -----------------------------------------------------------------------------------------
    def _ssh_pool(self) -> object:
        if self._pool is None:
            from tpu_runtime.remote.ssh_exec import SshPool

            self._pool = SshPool(connect_timeout_s=self.connect_timeout_s or 10.0)
        return self._pool

    def _knobs(self, spec: RunSpec) -> tuple[int, float | None]:
        """Concurrency and connect timeout from the target as configured now (not part of what runs)."""
        with contextlib.suppress(TargetError):
            chosen = self.target(spec.target)
            if not isinstance(chosen, GkeTarget):
                return chosen.max_concurrency, self.connect_timeout_s or chosen.connect_timeout_s
        return 32, self.connect_timeout_s

    def _check_uploads(self, request: RunRequest, actor: str) -> None:
        for up in request.spec.uploads:
            path = Path(up.source)
            if not path.is_file() or file_sha256(path) != up.sha256:
                with self.store.write() as conn:
                    audit.append(
                        conn, "refused", request.id, actor, {"why": "upload_changed", "file": up.source}
                    )
                raise ApprovalError(
                    "changed", f"{up.source} changed after it was approved: request the run again"
                )

    async def start(self, approval: Approval, actor: str = "tpu-agent") -> str:
        """Use the approval (once) and start the run in the background; returns the run id."""
        request = ap.get_request(self.store, approval.request_id)
        self._check_uploads(request, actor)
        request, run_id = ap.consume(self.store, approval, actor, self.clock())
        if request.spec.loop is not None:
            loops.open_loop(self.store, request.id, approval.id, request.spec.loop, self.clock())
        self._launch(request, run_id, actor)
        return run_id

    def _launch(self, request: RunRequest, run_id: str, actor: str) -> None:
        spec = request.spec
        handle = _RunHandle(
            run_id,
            request.id,
            max(1, len(spec.workers)),
            self.clock(),
            self.state_path / "runs" / f"{run_id}.log",
        )
        self._runs[run_id] = handle
        handle.task = asyncio.create_task(self._drive(request, handle, actor))

    async def _drive(self, request: RunRequest, handle: _RunHandle, actor: str) -> None:
        spec = request.spec
        begun = time.monotonic()
        state: RunState = "failed"
        results: list[WorkerResult] = []
        attempt = 0
        try:
            if spec.gke is not None:
                from tpu_runtime.remote.gke import run_workload

                results = await run_workload(
                    spec.gke, handle.run_id, handle.emit, handle.cancel, spec.time_limit_s
                )
                state = _overall(results, handle.cancel.is_set())
            elif spec.loop is not None:
                state, results, attempt = await self._drive_loop(request, handle)
            else:
                results = await self._attempt(request, handle, 0, spec.command)
                state = _overall(results, handle.cancel.is_set())
        except Exception as exc:  # a bug or kubectl failure: record it rather than lose the run
            handle.emit(
                OutputLine(
                    run_id=handle.run_id,
                    worker=-1,
                    worker_name="tpu-agent",
                    stream="stderr",
                    text=f"error: {exc}",
                )
            )
            state = "failed"
        result = RunResult(
            run_id=handle.run_id,
            request_id=request.id,
            state=state,
            duration_s=round(time.monotonic() - begun, 3),
            workers=results,
            attempt=attempt,
        )
        runs.finish_run(self.store, result, actor, self.clock())
        handle.emit(result)
        handle.close(result, self.clock())

    async def _attempt(
        self, request: RunRequest, handle: _RunHandle, attempt: int, argv: tuple[str, ...]
    ) -> list[WorkerResult]:
        from tpu_runtime.remote.ssh_exec import SshPool, SshRun

        pool = self._ssh_pool()
        assert isinstance(pool, SshPool)
        concurrency, timeout = self._knobs(request.spec)
        runner = SshRun(
            request.spec,
            handle.run_id,
            request.id,
            pool,
            handle.emit,
            handle.cancel,
            attempt=attempt,
            argv=argv,
            max_concurrency=concurrency,
            connect_timeout_s=timeout,
            downloads_dir=self.state_path / "downloads" / request.id / (f"a{attempt}" if attempt else ""),
        )
        return await runner.run()

    async def _drive_loop(
        self, request: RunRequest, handle: _RunHandle
    ) -> tuple[RunState, list[WorkerResult], int]:
        plan = request.spec.loop
        assert plan is not None
        results: list[WorkerResult] = []
        n = 0
        while not handle.cancel.is_set():
            try:
                started = loops.begin_attempt(self.store, request.id, plan, self.clock())
            except loops.BudgetExhausted as exc:
                handle.emit(
                    OutputLine(
                        run_id=handle.run_id, worker=-1, worker_name="loop", stream="stderr", text=str(exc)
                    )
                )
                return "failed", results, n
            if started is None:
                return "succeeded", results, n
            n, index = started
            begun = time.monotonic()
            results = await self._attempt(request, handle, n, plan.attempts[index])
            outcome = _overall(results, handle.cancel.is_set())
            attempt_state: loops.AttemptState = (
                "ok" if outcome == "succeeded" else "interrupted" if outcome == "cancelled" else "failed"
            )
            loops.finish_attempt(self.store, request.id, n, attempt_state, outcome, self.clock())
            handle.emit(
                RunResult(
                    run_id=handle.run_id,
                    request_id=request.id,
                    state=outcome,
                    duration_s=round(time.monotonic() - begun, 3),
                    workers=results,
                    attempt=n,
                )
            )
        return "cancelled", results, n

    async def execute(self, approval: Approval, actor: str = "tpu-agent") -> AsyncIterator[RunEvent]:
        """Start the approved run and yield its events until its RunResult."""
        run_id = await self.start(approval, actor)
        async for event in self.stream(run_id):
            yield event

    async def resume_loop(self, request_id: str, actor: str = "tpu-agent") -> str:
        """Carry on a loop whose runner died: interrupted attempts count, the approval must still match."""
        request = ap.get_request(self.store, request_id)
        plan = request.spec.loop
        approval_id = loops.loop_approval(self.store, request_id)
        if plan is None or approval_id is None:
            raise ApprovalError("unknown", f"request {request_id} is not a started loop")
        if any(h.request_id == request_id and not h.done for h in self._runs.values()):
            raise ApprovalError("not_pending", f"loop {request_id} is still running here")
        approval = ap.get_approval(self.store, approval_id)
        if spec_digest(request.spec) != approval.digest or request.digest != approval.digest:
            raise ApprovalError("changed", f"loop {request_id} changed after it was approved: refused")
        self._check_uploads(request, actor)
        now = self.clock()
        loops.mark_interrupted(self.store, request_id, now)
        run_id = runs.start_resumed_run(self.store, request_id, approval_id, actor, now)
        self._launch(request, run_id, actor)
        return run_id

    async def stream(self, run_id: str) -> AsyncIterator[RunEvent]:
        """Events of a run started in this process, from the first one still buffered."""
        handle = self._runs.get(run_id)
        if handle is None:
            stored = runs.stored_status(self.store, run_id)
            if stored is None or stored.result is None:
                raise KeyError(f"no run {run_id!r} in this process")
            yield stored.result
            return
        async for event in handle.follow():
            yield event

    def cancel(self, run_id: str) -> bool:
        """Ask a run started by this process to stop; True if it was still running."""
        handle = self._runs.get(run_id)
        if handle is None or handle.done:
            return False
        handle.cancel.set()
        return True

    def status(self, run_id: str) -> RunStatus | None:
        handle = self._runs.get(run_id)
        if handle is None:
            return runs.stored_status(self.store, run_id)
        return RunStatus(
            run_id=run_id,
            request_id=handle.request_id,
            state=handle.result.state if handle.result else "running",
            started_at=handle.started_at,
            finished_at=handle.finished_at,
            lines=handle.lines,
            workers_done=handle.workers_done,
            workers_total=handle.workers_total,
            result=handle.result,
        )

    async def wait(self, run_id: str) -> RunResult:
        handle = self._runs[run_id]
        if handle.task is not None:
            await asyncio.shield(handle.task)
        assert handle.result is not None
        return handle.result

    async def aclose(self) -> None:
        """Cancel what still runs here, wait for it, and close pooled connections."""
        for handle in self._runs.values():
            if not handle.done:
                handle.cancel.set()
        tasks = [h.task for h in self._runs.values() if h.task is not None and not h.task.done()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._pool is not None:
            from tpu_runtime.remote.ssh_exec import SshPool

            assert isinstance(self._pool, SshPool)
            await self._pool.close()


def _overall(results: list[WorkerResult], cancelled: bool) -> RunState:
    if cancelled:
        return "cancelled"
    return "succeeded" if results and all(r.status == "ok" for r in results) else "failed"


def whoami(via: str) -> str:
    """How the approver is named in the audit log: local user and the channel they answered on."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{via}"
