"""Run an approved spec on every worker over SSH (asyncssh), stream its output, and stop it on cancel.

- Connections are pooled (one per worker address, user and pinned key set) with keepalives, and only
  the pinned host keys from the spec are accepted; the user's ~/.ssh/config is not read, so nothing can
  redirect a worker to another address than the one approved.
- Handshakes and uploads are bounded by a semaphore (`max_concurrency`); commands then start on every
  worker that is ready without waiting for a slot, because multi-host TPU programs block until all hosts
  join.
- Each worker's output is read line by line from stdout and stderr and handed to a callback as it
  arrives; its SHA-256 is kept for the audit log.
- Failures are classified per worker (refused, timeout, unreachable, auth, host key, connection lost,
  time limit, setup, exit) and never stop the other workers.
- Cancel closes the channel and then signals the remote process group through a second channel (see
  `wrap`), and reports whether the group is gone.
- What runs on the worker is the gate (`worker_gate`): the SSH command is the gate's own source, and the
  run's bundle (spec, approval and its proof, secrets, audit head) goes to it on stdin. Uploads are sent
  from the run's private snapshot (`snapshot`), never re-read from the user's files.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import posixpath
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.remote.confine import local_inside, remote_inside
from tpu_runtime.remote.report import ErrorKind, OutputLine, RunEvent, WorkerResult
from tpu_runtime.remote.snapshot import UploadSnapshot
from tpu_runtime.remote.spec import RunSpec, WorkerRef, canonical_json, spec_to_json
from tpu_runtime.remote.worker_gate import EXIT_REFUSED
from tpu_runtime.remote.wrap import (
    CANCEL_GRACE_S,
    EXIT_TIMED_OUT,
    KILL_AFTER_S,
    cancel_line,
    files_dir,
    gate_line,
)

if TYPE_CHECKING:
    import asyncssh

    from tpu_runtime.remote.approvals import Approval

KEEPALIVE_S = 15.0
WATCHDOG_SLACK_S = 15.0  # past time limit + kill-after: the remote side should have ended by itself
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class WorkerFailure(TpuAgentError):
    """A classified failure on one worker; `kind` is an ErrorKind, the message one line."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


def classify(exc: BaseException, connected: bool) -> WorkerFailure:
    """Map a connection or session exception to one of our error kinds with a one-line message."""
    import asyncssh

    if isinstance(exc, WorkerFailure):
        return exc
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return WorkerFailure("host_key", f"host key is not the pinned one: {text}")
    if isinstance(exc, asyncssh.PermissionDenied):
        return WorkerFailure("auth", f"authentication failed: {text}")
    if isinstance(exc, ConnectionRefusedError):
        return WorkerFailure("refused", "connection refused (is sshd running and the port right?)")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return WorkerFailure("timeout", "timed out connecting")
    if isinstance(
        exc, asyncssh.ConnectionLost | asyncssh.DisconnectError | BrokenPipeError | ConnectionResetError
    ):
        return WorkerFailure("connection_lost" if connected else "unreachable", f"connection lost: {text}")
    if isinstance(exc, asyncssh.SFTPError):
        return WorkerFailure("setup", f"file transfer failed: {text}")
    if isinstance(exc, OSError):
        return WorkerFailure("connection_lost" if connected else "unreachable", f"network error: {text}")
    return WorkerFailure("connection_lost" if connected else "unreachable", f"{type(exc).__name__}: {text}")


@dataclass
class GateInputs:
    """What the worker's gate needs besides the spec: the approval and its proof, the approver key the
    executor trusts (pinned by the gate on first use), the secret values, the private upload copies, and
    a way to read the audit log's head when the command is about to start."""

    approval: Approval
    key_line: str
    secrets: dict[str, str]
    snapshot: UploadSnapshot
    audit_head: Callable[[], dict[str, Any]]


def approval_kind(via: str) -> str:
    from tpu_runtime.remote.approvals import ELICITATION_VIA, POLICY_VIA

    return {POLICY_VIA: "policy", ELICITATION_VIA: "elicitation"}.get(via, "person")


def gate_bundle(
    spec: RunSpec,
    request_id: str,
    run_id: str,
    worker: WorkerRef,
    attempt: int,
    argv: tuple[str, ...],
    gate: GateInputs,
) -> bytes:
    """The gate's stdin for one worker and attempt (holds secrets: never logged, never in argv)."""
    approval = gate.approval
    kind = approval_kind(approval.via)
    policy = None
    if kind != "person" and approval.statement and approval.signature:
        policy = {"json": approval.statement, "signature": approval.signature}
    bundle = {
        "v": 1,
        "spec": spec_to_json(spec),
        "digest": approval.digest,
        "request": request_id,
        "run_id": run_id,
        "worker": worker.index,
        "worker_name": worker.name,
        "attempt": attempt,
        "argv": list(argv),
        "key": gate.key_line,
        "kind": kind,
        "approval": {
            "id": approval.id,
            "request": approval.request_id,
            "digest": approval.digest,
            "approver": approval.approver,
            "expires_at": approval.expires_at,
            "statement": approval.statement if kind == "person" else None,
            "signature": approval.signature if kind == "person" else None,
        },
        "policy": policy,
        "secrets": gate.secrets,
        "audit": gate.audit_head(),
    }
    return canonical_json(bundle).encode()


class SshPool:
    """Open SSH connections, reused across runs while they stay up; one connect per key at a time."""

    def __init__(self, connect_timeout_s: float = 10.0) -> None:
        self.connect_timeout_s = connect_timeout_s
        self._conns: dict[tuple[Any, ...], asyncssh.SSHClientConnection] = {}
        self._locks: dict[tuple[Any, ...], asyncio.Lock] = {}

    def _key(self, worker: WorkerRef, identity_file: str | None) -> tuple[Any, ...]:
        return (worker.host, worker.port, worker.user, worker.host_keys, identity_file)

    async def get(
        self, worker: WorkerRef, identity: str | None = None, connect_timeout_s: float | None = None
    ) -> asyncssh.SSHClientConnection:
        import asyncssh

        timeout = connect_timeout_s or self.connect_timeout_s
        key = self._key(worker, identity)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            conn = self._conns.get(key)
            if conn is not None and not conn.is_closed():
                return conn
            try:
                trusted = [asyncssh.import_public_key(k) for k in worker.host_keys]
            except (asyncssh.KeyImportError, ValueError) as exc:
                raise WorkerFailure("host_key", f"pinned host key cannot be read: {exc}") from None
            options: dict[str, Any] = {
                "username": worker.user,
                "known_hosts": (trusted, [], []),
                "config": None,  # never let ~/.ssh/config change the approved address or key
                "keepalive_interval": KEEPALIVE_S,
                "keepalive_count_max": 3,
                "connect_timeout": timeout,
            }
            if identity:
                options["client_keys"] = [str(Path(identity).expanduser())]
                options["agent_path"] = None
            conn = await asyncio.wait_for(asyncssh.connect(worker.host, worker.port, **options), timeout + 5)
            self._conns[key] = conn
            return conn

    async def close(self) -> None:
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            conn.close()
        for conn in conns:
            with contextlib.suppress(Exception):
                await conn.wait_closed()


def _signal_name(status: int) -> str | None:
    """A shell reports death by signal N as exit status 128+N."""
    if 128 < status < 128 + 65:
        try:
            return signal.Signals(status - 128).name
        except ValueError:
            return f"SIG{status - 128}"
    return None


class SshRun:
    """One attempt of an approved spec on its workers."""

    def __init__(
        self,
        spec: RunSpec,
        run_id: str,
        run_key: str,
        pool: SshPool,
        emit: Callable[[RunEvent], None],
        cancel: asyncio.Event,
        *,
        attempt: int = 0,
        argv: tuple[str, ...] | None = None,
        max_concurrency: int = 32,
        connect_timeout_s: float | None = None,
        downloads_dir: Path | None = None,
        gate: GateInputs,
    ) -> None:
        self.gate = gate
        self.spec = spec
        self.run_id = run_id
        self.run_key = run_key
        self.pool = pool
        self.emit = emit
        self.cancel = cancel
        self.attempt = attempt
        self.argv = argv if argv is not None else spec.command
        self.slots = asyncio.Semaphore(max_concurrency)
        self.connect_timeout_s = connect_timeout_s
        self.downloads_dir = downloads_dir

    async def run(self) -> list[WorkerResult]:
        tasks = [asyncio.create_task(self._worker(w)) for w in self.spec.workers]
        return list(await asyncio.gather(*tasks))

    async def _upload(self, conn: asyncssh.SSHClientConnection) -> None:
        base = files_dir(self.spec.remote_dir, self.run_key)
        async with conn.start_sftp_client() as sftp:
            await sftp.makedirs(base, exist_ok=True)
            base_real = await sftp.realpath(base)
            for up in self.spec.uploads:
                parent, name = posixpath.split(up.dest)
                folder = posixpath.join(base, parent) if parent else base
                await sftp.makedirs(folder, exist_ok=True)
                folder_real = await sftp.realpath(folder)
                if not remote_inside(base_real, folder_real):
                    raise WorkerFailure(
                        "setup", f"upload {up.dest!r} resolves outside the run folder: refused"
                    )
                dest = posixpath.join(folder_real, name)
                if await sftp.exists(dest) and await sftp.islink(dest):
                    raise WorkerFailure("setup", f"upload {up.dest!r} would write through a symlink: refused")
                # Write beside the destination, then rename over it: workers that share a home folder
                # (NFS, or several workers on one host) never see each other's half-written file.
                part = posixpath.join(folder_real, f".{name}.{uuid.uuid4().hex}.part")
                sent = hashlib.sha256()
                async with sftp.open(part, "wb") as remote:
                    for offset, length in self.gate.snapshot.chunks(up.dest):
                        block = self.gate.snapshot.read(up.dest, offset, length)
                        sent.update(block)
                        await remote.write(block, offset)
                if sent.hexdigest() != up.sha256:
                    # the private copy was written to while it was sent (same-user processes can open
                    # it through /proc): these bytes are not the approved ones, so the command never starts
                    await sftp.remove(part)
                    raise WorkerFailure(
                        "setup",
                        f"upload {up.dest!r} changed while it was sent (not the approved bytes): refused",
                    )
                await sftp.posix_rename(part, dest)

    async def _download(self, conn: asyncssh.SSHClientConnection, worker: WorkerRef) -> list[str]:
        if not self.spec.downloads or self.downloads_dir is None:
            return []
        local = self.downloads_dir / f"w{worker.index}"
        local.mkdir(parents=True, exist_ok=True)
        fetched: list[str] = []
        async with conn.start_sftp_client() as sftp:
            for item in self.spec.downloads:
                remote = item.remote
                if remote.startswith("~/"):
                    remote = remote[2:]  # SFTP paths are relative to the login folder already
                elif not remote.startswith("/"):
                    remote = posixpath.join(files_dir(self.spec.remote_dir, self.run_key), remote)
                await sftp.get(remote, str(local), recurse=True, preserve=False)
                target = local / posixpath.basename(remote.rstrip("/"))
                fetched.append(str(target))
        for path in local.rglob("*"):
            if not local_inside(local, path):
                raise WorkerFailure("setup", f"downloaded {path} resolves outside {local}: refused")
        return fetched

    async def _stop_remote(self, conn: asyncssh.SSHClientConnection, worker: WorkerRef) -> bool:
        """Signal the remote process group through a fresh channel; True when it is gone."""
        line = cancel_line(self.spec.remote_dir, self.run_key, worker.index, self.attempt)
        try:
            done = await asyncio.wait_for(conn.run(line, check=False), CANCEL_GRACE_S + 15)
        except Exception:
            try:
                fresh = await self.pool.get(worker, self.spec.identity_file, self.connect_timeout_s)
                done = await asyncio.wait_for(fresh.run(line, check=False), CANCEL_GRACE_S + 15)
            except Exception:
                return False
        return done.exit_status in (0, 3)

    async def _pump(
        self,
        reader: asyncssh.SSHReader[bytes],
        worker: WorkerRef,
        stream: str,
        digest: Any,
        counter: list[int],
        gate_said: list[str] | None = None,
    ) -> None:
        async for raw in reader:
            if not raw:  # end of stream
                break
            digest.update(raw)
            counter[0] += 1
            if gate_said is not None and counter[0] <= 3 and raw.startswith(b"tpu-agent gate: "):
                gate_said.append(raw.decode("utf-8", errors="replace").strip())
            self.emit(
                OutputLine(
                    run_id=self.run_id,
                    worker=worker.index,
                    worker_name=worker.name,
                    stream="stdout" if stream == "stdout" else "stderr",
                    text=raw.decode("utf-8", errors="replace").rstrip("\r\n"),
                )
            )

    async def _worker(self, worker: WorkerRef) -> WorkerResult:
        start = time.monotonic()
        out_hash, err_hash = hashlib.sha256(), hashlib.sha256()
        out_n, err_n = [0], [0]
        gate_said: list[str] = []
        connected = False
        status: dict[str, Any] = {}

        def finish(**fields: Any) -> WorkerResult:
            result = WorkerResult(
                run_id=self.run_id,
                worker=worker.index,
                worker_name=worker.name,
                host=f"{worker.host}:{worker.port}",
                duration_s=round(time.monotonic() - start, 3),
                stdout_sha256=out_hash.hexdigest(),
                stderr_sha256=err_hash.hexdigest(),
                stdout_lines=out_n[0],
                stderr_lines=err_n[0],
                **fields,
            )
            self.emit(result)
            return result

        try:
            async with self.slots:
                if self.cancel.is_set():
                    return finish(status="cancelled", error_kind="cancelled", error="cancelled before start")
                conn = await self.pool.get(worker, self.spec.identity_file, self.connect_timeout_s)
                connected = True
                if self.spec.uploads:
                    await self._upload(conn)
            if self.cancel.is_set():
                return finish(status="cancelled", error_kind="cancelled", error="cancelled before start")
            bundle = gate_bundle(
                self.spec, self.run_key, self.run_id, worker, self.attempt, self.argv, self.gate
            )
            process = await conn.create_process(gate_line(), encoding=None)
            process.stdin.write(bundle)
            process.stdin.write_eof()
            del bundle
            pumps = asyncio.gather(
                self._pump(process.stdout, worker, "stdout", out_hash, out_n),
                self._pump(process.stderr, worker, "stderr", err_hash, err_n, gate_said),
            )
            waiter = asyncio.ensure_future(process.wait_closed())
            cancelled = asyncio.ensure_future(self.cancel.wait())
            limit = self.spec.time_limit_s + KILL_AFTER_S + WATCHDOG_SLACK_S
            done, _ = await asyncio.wait(
                {waiter, cancelled}, timeout=limit, return_when=asyncio.FIRST_COMPLETED
            )
            cancelled.cancel()
            if waiter not in done:
                process.close()
                waiter.cancel()
                pumps.cancel()
                with contextlib.suppress(BaseException):
                    await pumps
                stopped = await self._stop_remote(conn, worker)
                if self.cancel.is_set():
                    return finish(
                        status="cancelled",
                        error_kind="cancelled",
                        error="cancelled on request",
                        remote_stopped=stopped,
                    )
                return finish(
                    status="failed",
                    error_kind="time_limit",
                    error=f"still running {limit:.0f} s after start; stopped",
                    remote_stopped=stopped,
                )
            await pumps
            status = {"exit": process.exit_status, "signal": process.exit_signal}
            downloads = await self._download(conn, worker) if process.exit_status is not None else []
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify(exc, connected)
            return finish(status="failed", error_kind=failure.kind, error=str(failure))
        exit_status: int | None = status["exit"]
        exit_signal = status["signal"]

        def command_failed(error: str, signal: str | None, **fields: Any) -> WorkerResult:
            """The command ended on its own terms and failed (a signal or a nonzero exit): its downloads
            still come back."""
            return finish(
                status="failed", signal=signal, error_kind="exit", error=error, downloads=downloads, **fields
            )

        if exit_signal:
            name = exit_signal[0]
            return command_failed(f"killed by signal {name}", name)
        if exit_status is None:
            return finish(
                status="failed",
                error_kind="connection_lost",
                error="the session ended without an exit status",
            )
        if exit_status == 0:
            return finish(status="ok", exit_status=0, downloads=downloads)
        if exit_status == EXIT_REFUSED and gate_said:
            return finish(
                status="failed", exit_status=exit_status, error_kind="gate", error=gate_said[-1][:300]
            )
        if exit_status == EXIT_TIMED_OUT and time.monotonic() - start >= self.spec.time_limit_s * 0.95:
            return finish(
                status="failed",
                exit_status=exit_status,
                error_kind="time_limit",
                error=f"stopped at its {self.spec.time_limit_s:g} s time limit",
                remote_stopped=True,
                downloads=downloads,
            )
        sig = _signal_name(exit_status)
        return command_failed(
            f"exit status {exit_status}" + (f" ({sig})" if sig else ""), sig, exit_status=exit_status
        )


async def check_workers(
    workers: tuple[WorkerRef, ...], identity: str | None, connect_timeout_s: float, max_concurrency: int = 32
) -> list[tuple[WorkerRef, float, WorkerFailure | None]]:
    """Handshake and authenticate with each worker (no command runs): (worker, seconds, failure or None)."""
    pool = SshPool(connect_timeout_s)
    slots = asyncio.Semaphore(max_concurrency)

    async def one(worker: WorkerRef) -> tuple[WorkerRef, float, WorkerFailure | None]:
        start = time.monotonic()
        async with slots:
            try:
                await pool.get(worker, identity)
            except Exception as exc:
                return worker, time.monotonic() - start, classify(exc, connected=False)
        return worker, time.monotonic() - start, None

    try:
        return list(await asyncio.gather(*(one(w) for w in workers)))
    finally:
        await pool.close()


async def read_gate_ledgers(
    workers: tuple[WorkerRef, ...], identity: str | None, connect_timeout_s: float, max_concurrency: int = 32
) -> list[tuple[WorkerRef, dict[str, Any], WorkerFailure | None]]:
    """Each worker gate's pinned key and ledger (`worker_gate show`: reads only, starts nothing)."""
    import json

    pool = SshPool(connect_timeout_s)
    slots = asyncio.Semaphore(max_concurrency)

    async def one(worker: WorkerRef) -> tuple[WorkerRef, dict[str, Any], WorkerFailure | None]:
        async with slots:
            try:
                conn = await pool.get(worker, identity)
                done = await asyncio.wait_for(
                    conn.run(gate_line("show"), check=False), connect_timeout_s + 30
                )
            except Exception as exc:
                return worker, {}, classify(exc, connected=False)
        if done.exit_status != 0:
            text = str(done.stderr or "").strip().splitlines()
            return worker, {}, WorkerFailure("exit", text[-1] if text else f"exit status {done.exit_status}")
        try:
            return worker, json.loads(str(done.stdout)), None
        except ValueError:
            return worker, {}, WorkerFailure("exit", "the gate's answer is not JSON")

    try:
        return list(await asyncio.gather(*(one(w) for w in workers)))
    finally:
        await pool.close()
