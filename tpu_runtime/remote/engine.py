"""The remote-execution API the CLI and the MCP servers call.

    engine = RemoteEngine()
    request = engine.request_run("my-v6e", ["python", "train.py"], uploads=[(Path("train.py"), None)])
    # show request.spec to the person; on their yes (CLI prompt, MCP elicitation, or
    # `tpu-agent approvals approve ID` in their terminal):
    key = approver.unlock(engine.approver_path, passphrase_typed_by_the_person)
    approval = engine.approve(request.id, approver="alice@tty", digest=request.digest, key=key)
    async for event in engine.execute(approval):   # OutputLine / WorkerResult / RunResult
        ...
    engine.cancel(run_id); engine.status(run_id)

There is deliberately no way to approve from a model: `approve` needs the person's approver key,
unlocked with the passphrase they type in their own terminal, and signs the approval with it; `start`
runs only approvals whose proof holds (`approvals.proof_problem`). Policy-approved read-only commands come
back from `request_run` already approved (approver `policy:...`) when the person signed that policy.
`approve_elicited` records an MCP dialog answer, only if the signed policy allows dialogs, and only this
engine instance will run it.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

from tpu_runtime.remote import approvals as ap
from tpu_runtime.remote import approver as keys
from tpu_runtime.remote import audit, loops, runs
from tpu_runtime.remote.approvals import Approval, ApprovalError, RunRequest, Trust
from tpu_runtime.remote.locations import approver_dir, policy_file, state_db, state_dir, targets_file
from tpu_runtime.remote.output import KEEP_RUNS, OutputPage, RunOutput, logged_page
from tpu_runtime.remote.policy import LoadedPolicy, auto_approval_rule, load_policy
from tpu_runtime.remote.report import (
    LoggedLine,
    OutputLine,
    RunEvent,
    RunResult,
    RunState,
    RunStatus,
    WorkerResult,
    parse_prefixed,
)
from tpu_runtime.remote.snapshot import UploadChanged, UploadSnapshot, take
from tpu_runtime.remote.spec import (
    Download,
    LoopPlan,
    RunSpec,
    SecretRef,
    SpecError,
    looks_secret,
    places,
    plan_uploads,
    secret_hash,
    secret_ref,
    spec_digest,
)
from tpu_runtime.remote.ssh_exec import GateInputs
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.targets import (
    AnyTarget,
    GkeTarget,
    RayTarget,
    TargetError,
    get_target,
    load_targets,
    resolve_workers,
    select_workers,
)
from tpu_runtime.remote.tpu_api import TpuApi
from tpu_runtime.remote.worker_gate import code_loading
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
        approver_path: Path | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        self.store = store or Store(state_db())
        self.approver_path = approver_path or approver_dir()
        self.environ = os.environ if environ is None else environ  # where secrets are read at start
        self._elicited: set[str] = set()
        self.targets_path = targets_path or targets_file()
        self.policy_path = policy_path or policy_file()
        self.state_path = state_path or state_dir()
        self.tpu_api = tpu_api
        self.clock = clock
        self.connect_timeout_s = connect_timeout_s
        self._runs: dict[str, _RunHandle] = {}
        self._outputs: dict[str, RunOutput] = {}
        self._pool: object | None = None

    # ---- targets -------------------------------------------------------------------------------------
    def targets(self) -> dict[str, AnyTarget]:
        return load_targets(self.targets_path)

    def target(self, name: str) -> AnyTarget:
        return get_target(self.targets_path, name)

    # ---- requests and decisions ------------------------------------------------------------------------
    def request_run(
        self,
        target: str,
        command: Sequence[str],
        *,
        workers: str = "all",
        env: dict[str, str] | None = None,
        secret_env: Sequence[str] = (),
        uploads: Sequence[tuple[Path, str | None]] = (),
        downloads: Sequence[str] = (),
        time_limit_s: float = 600.0,
        loop: LoopPlan | None = None,
        requested_by: str = "cli",
        use_policy: bool = True,
    ) -> RunRequest:
        """Build the spec (resolving workers and pinning their host keys), store it pending, audit it.

        `secret_env` names variables whose values are read from this process's environment now (to hash)
        and again when the run starts; only their names and salted hashes enter the spec. A plain `env`
        entry whose name looks like a credential is refused: pass it as a secret instead.
        Raises TargetError or SpecError with a one-line message when the request cannot be built.
        """
        if loop is not None:
            command = loop.attempts[0]
        if not command:
            raise SpecError("no command given (put it after --)")
        request_id = ap.new_id("r")
        chosen = self.target(target)
        env = dict(env or {})
        for name in env:
            if looks_secret(name):
                raise SpecError(
                    f"{name} looks like a credential: pass it by name with --secret-env {name} (its value "
                    "is read from your environment when the run starts and never stored or shown)"
                )
        secrets: dict[str, SecretRef] = {}
        for name in secret_env:
            if code_loading(name):
                raise SpecError(
                    f"{name} decides which code runs, so it cannot be a secret (its value would be hidden "
                    f"from the person who approves): pass it with -e {name}=VALUE, which shows it"
                )
            value = self.environ.get(name)
            if value is None:
                raise SpecError(f"secret {name} is not set in this environment")
            secrets[name] = secret_ref(value)
        try:
            if isinstance(chosen, GkeTarget):
                from tpu_runtime.remote.gke import build_manifest

                if secrets:
                    raise SpecError("GKE targets take secrets from a Kubernetes Secret, not --secret-env")
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
            elif isinstance(chosen, RayTarget):
                spec = self._ray_spec(
                    chosen,
                    target,
                    request_id,
                    tuple(command),
                    env,
                    secrets,
                    workers,
                    uploads,
                    downloads,
                    time_limit_s,
                    loop,
                )
            else:
                resolved = select_workers(resolve_workers(chosen, self.tpu_api), workers)
                spec = RunSpec(
                    target=target,
                    target_kind=chosen.kind,
                    workers=resolved,
                    command=tuple(command),
                    env=env,
                    secret_env=secrets,
                    uploads=plan_uploads(list(uploads)),
                    downloads=tuple(Download(remote=d) for d in downloads),
                    time_limit_s=time_limit_s,
                    remote_dir=chosen.remote_dir,
                    script=build_script(
                        remote_dir=chosen.remote_dir, run_key=request_id, time_limit_s=time_limit_s
                    ),
                    identity_file=chosen.identity_file,
                    loop=loop,
                )
        except ValueError as exc:
            if isinstance(exc, SpecError | TargetError):
                raise
            raise SpecError(str(exc).splitlines()[-1].strip()) from None
        request = ap.create_request(self.store, spec, requested_by, self.clock(), request_id=request_id)
        policy = self.policy() if use_policy else LoadedPolicy()
        rule = auto_approval_rule(spec, policy.policy) if policy.json_text is not None else None
        if rule:
            ap.approve(
                self.store,
                request.id,
                rule,
                request.digest,
                via=ap.POLICY_VIA,
                now=self.clock(),
                proof=policy,
            )
            request = ap.get_request(self.store, request.id)
        return request

    def _ray_spec(
        self,
        chosen: RayTarget,
        target: str,
        request_id: str,
        command: tuple[str, ...],
        env: dict[str, str],
        secrets: dict[str, SecretRef],
        workers: str,
        uploads: Sequence[tuple[Path, str | None]],
        downloads: Sequence[str],
        time_limit_s: float,
        loop: LoopPlan | None,
    ) -> RunSpec:
        """A Ray job submission: the uploads become its working_dir (with the launcher when it needs one)."""
        from tpu_runtime.remote.ray_jobs import (
            LAUNCHER_NAME,
            RayError,
            build_job,
            launcher_source,
            require_ray,
            uses_launcher,
        )
        from tpu_runtime.remote.staging import staged_script

        try:
            require_ray()
        except RayError as exc:
            raise SpecError(str(exc)) from None

        if secrets:
            raise SpecError(
                "Ray targets take no --secret-env: Ray keeps runtime_env in its job table for anyone with "
                "dashboard access; use the cluster's own secret store"
            )
        if workers != "all":
            raise SpecError("Ray targets place work by resources, so --worker does not apply (set tpu_hosts)")
        items = list(uploads)
        if uses_launcher(chosen.tpu_hosts, downloads):
            launcher = staged_script(self.state_path / "staging", "tpu_agent_ray_launch", launcher_source())
            items.append((launcher, LAUNCHER_NAME))
        return RunSpec(
            target=target,
            target_kind="ray",
            command=command,
            env=env,
            uploads=plan_uploads(items),
            downloads=tuple(Download(remote=d) for d in downloads),
            time_limit_s=time_limit_s,
            remote_dir="",
            loop=loop,
            ray=build_job(chosen, request_id, command, env, tuple(downloads)),
        )

    def approver_key(self) -> keys.ApproverKey | None:
        """The person's public approver key (pinned here; the workers pin it on first use)."""
        return keys.load_public(self.approver_path)

    def key_problem(self) -> str | None:
        """Why the key file's key is not one the audit log trusts (replaced by hand), or None."""
        with self.store.read() as conn:
            return ap.key_problem(conn, self.approver_key())

    def policy(self) -> LoadedPolicy:
        """The policy in effect: the file's only if the person's trusted key signed it as it is now."""
        problem = self.key_problem()
        if problem is not None:
            return LoadedPolicy(note=f"{self.policy_path} is not in effect: {problem}")
        return load_policy(self.policy_path, self.approver_key())

    def trust(self) -> Trust:
        key = self.approver_key() if self.key_problem() is None else None
        return Trust(key=key, elicited=frozenset(self._elicited))

    def _trusted_key_or_refuse(self, request: RunRequest | None, actor: str) -> None:
        problem = self.key_problem()
        if problem is None:
            return
        if request is not None:
            self._refuse(request, actor, "untrusted_key", {})
        raise ApprovalError("no_key", problem)

    def announce_key(
        self,
        key: keys.ApproverKey,
        actor: str,
        *,
        endorsed_by: keys.UnlockedApprover | None = None,
    ) -> None:
        """Record an approver key in the audit log (so `verify` knows which keys signed what); a key
        that replaces another carries the old key's signature over it (`endorsed_by`, unlocked)."""
        payload: dict[str, object] = {"key": key.public_line}
        if endorsed_by is not None:
            old = endorsed_by.key.public_line
            payload["endorsed_by"] = old
            payload["endorsement"] = endorsed_by.sign(
                keys.endorsement_text(old, key.public_line).encode(), keys.KEY_NAMESPACE
            )
        with self.store.write() as conn:
            audit.append(conn, "approver_key", key.fingerprint, actor, payload)

    # ---- the audit log -----------------------------------------------------------------------------------
    def verify_audit(self, expect_heads: list[tuple[int, str]] | None = None) -> audit.AuditCheck:
        """The chain, the anchors given, and every start's approval proof (see `approvals.start_problems`)."""
        with self.store.read() as conn:
            check = audit.verify(conn, expect_heads)
            current = self.approver_key()
            extra = ap.start_problems(conn, ap.known_keys(conn, current))
            problem = ap.key_problem(conn, current)
            if problem is not None:
                extra.insert(0, problem)
        if extra:
            check = check.model_copy(update={"ok": False, "problems": [*check.problems, *extra]})
        return check

    async def verify_remote(self, targets: Sequence[str] = ()) -> list[str]:
        """Compare each worker gate's ledger and pinned key with the local log; returns the problems.

        Every start a worker recorded must sit in the local log at the same row with the same hash (a
        truncated or recomputed log fails), and every start the local log says reached a worker must be
        in that worker's ledger.
        """
        from tpu_runtime.remote.ssh_exec import read_gate_ledgers

        chosen = {n: t for n, t in self.targets().items() if not isinstance(t, GkeTarget | RayTarget)}
        if targets:
            chosen = {n: t for n, t in chosen.items() if n in targets}
        key = self.approver_key()
        with self.store.read() as conn:
            # runs signed by any key this log announced count as ours (a key the person replaced too)
            tails = {line.split()[1][-16:] for line in ap.known_keys(conn, key)}
            hashes = {r["seq"]: r["hash"] for r in conn.execute("SELECT seq, hash FROM audit")}
            starts = {
                r["subject"]: json.loads(r["payload"])
                for r in conn.execute("SELECT subject, payload FROM audit WHERE kind IN ('start', 'resume')")
            }
            results = {r["id"]: r["result"] for r in conn.execute("SELECT id, result FROM runs")}
        this_log = hashes.get(1, audit.GENESIS)
        problems: list[str] = []
        for name, target in sorted(chosen.items()):
            workers = resolve_workers(target, self.tpu_api)
            ledgers = await read_gate_ledgers(workers, target.identity_file, target.connect_timeout_s)
            recorded: set[tuple[str, int]] = set()
            for worker, ledger, failure in ledgers:
                where = f"target {name} worker {worker.index} ({worker.name})"
                if failure is not None:
                    problems.append(f"{where}: cannot read its ledger: {failure}")
                    continue
                pinned = ledger.get("pinned")
                if pinned and key is None:
                    problems.append(
                        f"{where}: pins approver key {keys.fingerprint(pinned)}, but this machine has no "
                        "approver key: the key file was deleted (so its runs cannot be checked here)"
                    )
                elif pinned and key is not None and pinned.split()[:2] != key.public_line.split()[:2]:
                    problems.append(
                        f"{where}: pins approver key {keys.fingerprint(pinned)}, not {key.fingerprint}"
                    )
                other_logs: dict[str, int] = {}
                for entry in ledger.get("ledger", []):
                    if entry.get("event") != "start" or entry.get("key") not in tails:
                        continue  # another person's runs on a shared worker
                    if entry.get("audit_log") != this_log:
                        other_logs[str(entry.get("audit_log"))] = (
                            other_logs.get(str(entry.get("audit_log")), 0) + 1
                        )
                        continue
                    recorded.add((str(entry.get("run")), int(entry.get("worker", -1))))
                    seq, digest = entry.get("audit_seq"), entry.get("audit_hash")
                    if entry.get("run") not in starts:
                        problems.append(
                            f"{where}: ran {entry.get('run')}, which the local log does not record"
                        )
                    if isinstance(seq, int) and hashes.get(seq) != digest:
                        local = "lacks that row" if seq not in hashes else "has another hash there"
                        problems.append(
                            f"{where}: started {entry.get('run')} when the log's head was row {seq} "
                            f"({str(digest)[:16]}...); the local log {local}: it was truncated or rewritten"
                        )
                for log, count in other_logs.items():
                    problems.append(
                        f"{where}: {count} run(s) approved with your key belong to another audit log (first "
                        f"row {log[:16]}...): that log was deleted or replaced, unless you began a new one"
                    )
            for run_id, result in results.items():
                if not result or run_id not in starts:
                    continue
                parsed = RunResult.model_validate_json(result)
                request = starts[run_id].get("request")
                if not request or self._target_of(request) != name:
                    continue
                for w in parsed.workers:
                    if (
                        w.exit_status is not None
                        and w.error_kind != "gate"
                        and (run_id, w.worker) not in recorded
                    ):
                        problems.append(
                            f"target {name} worker {w.worker}: the local log says {run_id} ran there, "
                            "but the worker's ledger has no such start"
                        )
        return problems

    def _target_of(self, request_id: str) -> str | None:
        with contextlib.suppress(ApprovalError):
            return self.get_request(request_id).spec.target
        return None

    def get_request(self, request_id: str) -> RunRequest:
        return ap.get_request(self.store, request_id)

    def list_requests(self, states: tuple[str, ...] = ()) -> list[RunRequest]:
        return ap.list_requests(self.store, states)

    def approve(
        self, request_id: str, approver: str, digest: str, via: str = "cli", *, key: keys.UnlockedApprover
    ) -> Approval:
        """Record the person's yes, signed with their unlocked key. Never expose this as a tool."""
        pinned = self.approver_key()
        if pinned is None or pinned.public_line != key.key.public_line:
            raise ApprovalError("no_key", "the unlocked key is not the approver key pinned here")
        self._trusted_key_or_refuse(None, approver)
        with self.store.read() as conn:
            first = not ap.key_chain(conn)
        if first:  # from now on the log says which key is yours, so a key file swapped later is caught
            self.announce_key(pinned, approver)
        return ap.approve(self.store, request_id, approver, digest, via, self.clock(), signer=key)

    def approve_elicited(self, request_id: str, approver: str, digest: str) -> Approval:
        """Record an MCP dialog's yes; refused unless the person's signed policy allows dialogs.

        Only this engine instance will start it (the id is remembered here, not trusted from the file).
        """
        policy = self.policy()
        if not policy.policy.approvals.elicitation:
            raise ApprovalError(
                "unsigned",
                "your signed policy requires terminal approval: the person approves in their own terminal "
                f"with `tpu-agent approvals approve {request_id}`",
            )
        approval = ap.approve(
            self.store, request_id, approver, digest, ap.ELICITATION_VIA, self.clock(), proof=policy
        )
        self._elicited.add(approval.id)
        return approval

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
            if not isinstance(chosen, GkeTarget | RayTarget):
                return chosen.max_concurrency, self.connect_timeout_s or chosen.connect_timeout_s
        return 32, self.connect_timeout_s

    def _refuse(self, request: RunRequest, actor: str, why: str, detail: dict[str, str]) -> None:
        with self.store.write() as conn:
            audit.append(conn, "refused", request.id, actor, {"why": why, **detail})

    def _prepare(self, request: RunRequest, actor: str) -> tuple[UploadSnapshot, dict[str, str]]:
        """Read each upload once into a private copy (checked against its hash) and each secret from the
        environment (checked against its hash). Refusals are audited and raised as ApprovalError."""
        secrets: dict[str, str] = {}
        for name, ref in request.spec.secret_env.items():
            value = self.environ.get(name)
            if value is None or secret_hash(ref.salt, value) != ref.sha256:
                self._refuse(request, actor, "secret_changed", {"name": name})
                raise ApprovalError(
                    "changed",
                    f"secret {name} is {'not set' if value is None else 'not the value approved'} in this "
                    "environment: refused",
                )
            secrets[name] = value
        try:
            snapshot = take(request.spec.uploads, self.state_path / "snapshots")
        except UploadChanged as exc:
            self._refuse(request, actor, "upload_changed", {"detail": str(exc)})
            raise ApprovalError("changed", str(exc)) from None
        return snapshot, secrets

    def _audit_head(self) -> dict[str, object]:
        """The log's head now, and its first row's hash (which log this is), for the workers' ledgers."""
        with self.store.read() as conn:
            head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
            first = conn.execute("SELECT hash FROM audit WHERE seq = 1").fetchone()
        return {
            "seq": head["seq"] if head else 0,
            "hash": head["hash"] if head else audit.GENESIS,
            "log": first["hash"] if first else audit.GENESIS,
        }

    async def start(self, approval: Approval, actor: str = "tpu-agent") -> str:
        """Use the approval (once) and start the run in the background; returns the run id."""
        request = ap.get_request(self.store, approval.request_id)
        self._trusted_key_or_refuse(request, actor)
        snapshot, secrets = self._prepare(request, actor)
        try:
            request, run_id, stored = ap.consume(self.store, approval, actor, self.clock(), self.trust())
            if request.spec.loop is not None:
                loops.open_loop(self.store, request.id, approval.id, request.spec.loop, self.clock())
        except BaseException:
            snapshot.close()
            raise
        self._launch(request, run_id, actor, stored, snapshot, secrets)
        return run_id

    def _launch(
        self,
        request: RunRequest,
        run_id: str,
        actor: str,
        approval: Approval,
        snapshot: UploadSnapshot,
        secrets: dict[str, str],
    ) -> None:
        spec = request.spec
        key = self.approver_key()
        gate = GateInputs(
            approval=approval,
            key_line=key.public_line if key is not None else "",
            secrets=secrets,
            snapshot=snapshot,
            audit_head=self._audit_head,
        )
        handle = _RunHandle(
            run_id,
            request.id,
            places(spec),
            self.clock(),
            self.log_path(run_id),
        )
        self._runs[run_id] = handle
        handle.task = asyncio.create_task(self._drive(request, handle, actor, gate))

    async def _drive(self, request: RunRequest, handle: _RunHandle, actor: str, gate: GateInputs) -> None:
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
                state, results, attempt = await self._drive_loop(request, handle, gate)
            else:
                results = await self._attempt(request, handle, 0, spec.command, gate)
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
        finally:
            gate.snapshot.close()
        result = _result(handle, request, state, begun, results, attempt)
        runs.finish_run(self.store, result, actor, self.clock())
        handle.emit(result)
        handle.close(result, self.clock())

    def _downloads_dir(self, request: RunRequest, attempt: int) -> Path:
        """Where an attempt's downloads land: attempt 0 (a plain run) directly in the request's folder."""
        return self.state_path / "downloads" / request.id / (f"a{attempt}" if attempt else "")

    async def _attempt(
        self, request: RunRequest, handle: _RunHandle, attempt: int, argv: tuple[str, ...], gate: GateInputs
    ) -> list[WorkerResult]:
        from tpu_runtime.remote.ssh_exec import SshPool, SshRun

        if request.spec.ray is not None:
            return await self._ray_attempt(request, handle, attempt, argv, gate)
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
            downloads_dir=self._downloads_dir(request, attempt),
            gate=gate,
        )
        return await runner.run()

    async def _ray_attempt(
        self, request: RunRequest, handle: _RunHandle, attempt: int, argv: tuple[str, ...], gate: GateInputs
    ) -> list[WorkerResult]:
        """Submit one Ray job (a loop's attempt N gets the job id `<id>-aN`); the log records its id."""
        from tpu_runtime.remote.ray_jobs import entrypoint_for, run_job

        spec = request.spec
        job = spec.ray
        assert job is not None
        downloads = tuple(d.remote for d in spec.downloads)
        if spec.loop is None:
            job_id, entrypoint = job.submission_id, job.entrypoint
        else:
            job_id = f"{job.submission_id}-a{attempt}"
            entrypoint = entrypoint_for(job, argv, downloads, job.chips_per_host)

        def submitted(ray_job: str) -> None:
            with self.store.write() as conn:
                audit.append(
                    conn,
                    "ray_job",
                    handle.run_id,
                    "tpu-agent",
                    {"request": request.id, "ray_job": ray_job, "address": job.address, "attempt": attempt},
                )

        return await run_job(
            job,
            job_id=job_id,
            entrypoint=entrypoint,
            uploads=spec.uploads,
            snapshot=gate.snapshot,
            run_id=handle.run_id,
            emit=handle.emit,
            cancel=handle.cancel,
            time_limit_s=spec.time_limit_s,
            downloads_dir=self._downloads_dir(request, attempt),
            environ=self.environ,
            on_submitted=submitted,
        )

    async def _drive_loop(
        self, request: RunRequest, handle: _RunHandle, gate: GateInputs
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
            results = await self._attempt(request, handle, n, plan.attempts[index], gate)
            outcome = _overall(results, handle.cancel.is_set())
            attempt_state: loops.AttemptState = (
                "ok" if outcome == "succeeded" else "interrupted" if outcome == "cancelled" else "failed"
            )
            loops.finish_attempt(self.store, request.id, n, attempt_state, outcome, self.clock())
            handle.emit(_result(handle, request, outcome, begun, results, n))
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
        self._trusted_key_or_refuse(request, actor)
        trust = self.trust()
        problem = ap.proof_problem(approval.model_dump(), request.spec, trust.key_lines(), trust.elicited)
        if problem is not None:
            self._refuse(request, actor, "unsigned", {"approval": approval_id})
            raise ApprovalError("unsigned", f"loop {request_id}'s approval is not the person's: {problem}")
        snapshot, secrets = self._prepare(request, actor)
        now = self.clock()
        loops.mark_interrupted(self.store, request_id, now)
        run_id = runs.start_resumed_run(self.store, request_id, approval_id, actor, now)
        self._launch(request, run_id, actor, approval, snapshot, secrets)
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

    def keep_output(self, run_id: str, request: RunRequest) -> RunOutput:
        """Follow a run started here into memory, so its output can be paged while it runs; the output
        of the last KEEP_RUNS runs is kept, older finished ones are read back from their log file."""
        output = RunOutput(run_id, request)
        self._outputs[run_id] = output
        finished = [kept for kept, out in self._outputs.items() if out.done]
        for old in finished[: max(0, len(self._outputs) - KEEP_RUNS)]:
            del self._outputs[old]
        output.task = asyncio.create_task(output.follow(self))
        return output

    def kept_output(self, run_id: str) -> RunOutput | None:
        """The in-memory output of a run `keep_output` follows (None for other runs)."""
        return self._outputs.get(run_id)

    async def output_page(
        self, run_id: str, since: int, limit: int, wait_s: float = 0.0
    ) -> OutputPage | None:
        """Up to `limit` output lines of a run from line `since`: from memory for a run followed here
        (waiting up to `wait_s` for new lines while it runs), else from its log file; None: no such run."""
        output = self._outputs.get(run_id)
        if output is not None:
            return await output.next_page(self, since, limit, wait_s)
        stored = self.status(run_id)
        if stored is None:
            return None
        return logged_page(run_id, stored.state, self.logged_lines(run_id), since, limit)

    def log_path(self, run_id: str) -> Path:
        """Where a run's output lines are kept, one `OutputLine.prefixed` line each."""
        return self.state_path / "runs" / f"{run_id}.log"

    def logged_lines(self, run_id: str) -> list[LoggedLine]:
        """A run's output as its log file holds it (empty when there is none or it cannot be read)."""
        try:
            text = self.log_path(run_id).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return [parse_prefixed(line) for line in text.splitlines()]

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


def _result(
    handle: _RunHandle,
    request: RunRequest,
    state: RunState,
    begun: float,
    results: list[WorkerResult],
    attempt: int,
) -> RunResult:
    """A run's (or one loop attempt's) result, timed from `begun` (a time.monotonic() reading)."""
    return RunResult(
        run_id=handle.run_id,
        request_id=request.id,
        state=state,
        duration_s=round(time.monotonic() - begun, 3),
        workers=results,
        attempt=attempt,
    )


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
