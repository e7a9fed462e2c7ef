"""Ray: the job submission a person approves, and Ray's job client submitting, following and stopping it.

What is approved is `RayJob`: entrypoint, runtime_env, resources, metadata and the submission id, plus the
spec's uploads (each by SHA-256), which become the job's working_dir. At start the uploads are read once
into the checked snapshot (a file changed since approval is refused there, before anything is sent), then
zipped in memory from those copies (hashed again as they go in) and uploaded as the job's package, whose
`gcs://` URI is the working_dir `submit_job` gets with the other approved arguments. The submission id
is derived from the request id, so Ray itself also refuses a second job under one approval. Ray's client
would pack a folder itself, reading it again (and leaving out what a .gitignore lists); building the
package here means the bytes Ray unpacks are the bytes that were checked.

Ray's job API (ray.job_submission.JobSubmissionClient, https://docs.ray.io/en/latest/cluster/running-applications/job-submission/sdk.html):
`submit_job`, `get_job_status` (PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED), `get_job_info`
(driver exit code, message), `tail_job_logs` (the log as it grows) and `stop_job` (SIGTERM, then SIGKILL).
Its calls are blocking HTTP, so they run in threads; the log is followed on an asyncio task.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import hashlib
import io
import re
import shlex
import tarfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tpu_runtime.errors import ExternalError
from tpu_runtime.remote import ray_launch
from tpu_runtime.remote.confine import local_inside
from tpu_runtime.remote.report import ErrorKind, OutputLine, RunEvent, WorkerResult
from tpu_runtime.remote.snapshot import UploadSnapshot
from tpu_runtime.remote.spec import RayJob, Upload
from tpu_runtime.remote.targets import RayTarget

INSTALL_HINT = (
    "Ray targets need Ray's job client: pip install 'tpu-agent[ray]' (in a checkout: pip install -e '.[ray]')"
)
LAUNCHER_NAME = "tpu_agent_ray_launch.py"
POLL_S = 1.0
STOP_WAIT_S = 30.0  # after stop_job: how long to wait for Ray to report the job ended
TAIL_GRACE_S = 10.0  # after the job ended: how long the log stream may take to drain
# Ray prints a task's lines in the driver's log behind "(task pid=N, ip=...) ", coloured on a terminal.
RAY_PREFIX = r"^(?:(?:\x1b\[[0-9;]*m)*\([^)]*\)(?:\x1b\[[0-9;]*m)* )?"
HOST_LINE = re.compile(RAY_PREFIX + r"\[tpu-agent w(\d+)\] ?(.*)$")
EXIT_LINE = re.compile(RAY_PREFIX + rf"{ray_launch.MARK_EXIT} w(\d+) (-?\d+)$")
DL_LINE = re.compile(RAY_PREFIX + rf"{ray_launch.MARK_DL} (begin|data|end|error) w(\d+) ?(.*)$")


class RayError(ExternalError, RuntimeError):
    """Ray is missing, the cluster cannot be reached, or it refused a call; the message is one line."""


def job_client_class() -> Any:
    """Ray's `JobSubmissionClient`, or RayError with the install line when Ray is not installed."""
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError:
        raise RayError(INSTALL_HINT) from None
    return JobSubmissionClient


def require_ray() -> None:
    """RayError with the install line when Ray is not installed (looked up, not imported: Ray is slow)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise RayError(INSTALL_HINT)


def launcher_source() -> str:
    return Path(ray_launch.__file__).read_text(encoding="utf-8")


def submission_id(request_id: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in request_id)
    return f"tpu-agent-{cleaned}"


def uses_launcher(hosts: int, downloads: Sequence[str]) -> bool:
    """Whether the entrypoint goes through the launcher: several hosts, or files to bring back."""
    return hosts > 1 or bool(downloads)


def entrypoint_for(job: RayJob, argv: tuple[str, ...], downloads: tuple[str, ...], chips: int) -> str:
    """The shell line Ray runs for ARGV: ARGV itself, or the launcher in front of it."""
    if not uses_launcher(job.hosts, downloads):
        return shlex.join(argv)
    words = ["python", LAUNCHER_NAME, "--hosts", str(job.hosts), "--chips", str(chips)]
    for path in downloads:
        words += ["--download", path]
    return shlex.join([*words, "--", *argv])


def build_job(
    target: RayTarget,
    request_id: str,
    command: tuple[str, ...],
    env: dict[str, str],
    downloads: tuple[str, ...],
) -> RayJob:
    """The submission the person approves (minus working_dir, which is the spec's uploads)."""
    runtime_env = copy.deepcopy(target.runtime_env)
    env_vars = {**(runtime_env.get("env_vars") or {}), **env}
    if env_vars:
        runtime_env["env_vars"] = dict(sorted(env_vars.items()))
    if target.tpu_hosts > 1:  # the launcher starts on the slice's worker 0; its tasks hold the chips
        resources = {f"TPU-{target.tpu_pod_type}-head": 1.0}
    else:
        resources = {"TPU": float(target.tpu_chips_per_host)} if target.tpu_chips_per_host else {}
    resources.update(target.resources)
    headers = dict(target.headers_env)
    if target.auth_token_env:
        headers["Authorization"] = target.auth_token_env
    job = RayJob(
        address=target.address,
        submission_id=submission_id(request_id),
        entrypoint="-",
        runtime_env=runtime_env,
        entrypoint_resources=resources,
        entrypoint_num_cpus=target.entrypoint_num_cpus,
        metadata={**target.metadata, "tpu_agent_request": request_id},
        hosts=target.tpu_hosts,
        chips_per_host=target.tpu_chips_per_host,
        headers_env=headers,
        verify_tls=target.verify_tls,
    )
    return job.model_copy(update={"entrypoint": entrypoint_for(job, command, downloads, job.chips_per_host)})


def headers_from(job: RayJob, environ: Mapping[str, str]) -> dict[str, str]:
    """Header values read from the environment now (never stored); Authorization gets `Bearer `."""
    headers: dict[str, str] = {}
    for header, var in job.headers_env.items():
        value = environ.get(var)
        if not value:
            raise RayError(f"the target sends header {header} from ${var}, which is not set here")
        headers[header] = f"Bearer {value}" if header == "Authorization" else value
    return headers


def connect(job: RayJob, environ: Mapping[str, str]) -> Any:
    """A job client for the cluster, or RayError saying in one line why there is none."""
    client_class = job_client_class()
    try:
        return client_class(job.address, headers=headers_from(job, environ), verify=job.verify_tls)
    except ConnectionError:
        raise RayError(
            f"Ray cluster at {job.address} is not reachable: is its head node up and is this the dashboard "
            "(job-submission) port?"
        ) from None
    except RuntimeError as exc:
        raise RayError(f"Ray cluster at {job.address} refused the connection: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def package(uploads: tuple[Upload, ...], snapshot: UploadSnapshot) -> tuple[str, bytes]:
    """The working_dir as Ray's package: a zip built in memory from the checked copies, each file hashed
    again as it goes in, and its content-addressed `gcs://` URI. Raises RayError when a file changed."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for up in sorted(uploads, key=lambda u: u.dest):
            digest = hashlib.sha256()
            data = b"".join(
                snapshot.read(up.dest, offset, length) for offset, length in snapshot.chunks(up.dest)
            )
            digest.update(data)
            if digest.hexdigest() != up.sha256 or len(data) != up.size:
                raise RayError(f"{up.source} changed while it was packed for Ray: refused")
            entry = zipfile.ZipInfo(up.dest, date_time=(1980, 1, 1, 0, 0, 0))  # same bytes, same zip
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    data = buffer.getvalue()
    return f"gcs://_ray_pkg_{hashlib.sha256(data).hexdigest()}.zip", data


def upload_package(client: Any, uri: str, data: bytes) -> None:
    """PUT the package bytes to the cluster (the request Ray's own client makes for a local working_dir,
    `/api/packages/<protocol>/<name>`), so what Ray unpacks is these bytes and not a re-read folder."""
    name = uri.removeprefix("gcs://")
    reply = client._do_request("PUT", f"/api/packages/gcs/{name}", data=data)
    if reply.status_code != 200:
        raise RayError(
            f"Ray refused the working_dir package ({reply.status_code}): {_first_line(Exception(reply.text))}"
        )


class _Collector:
    """Splits the job log into output lines (by host), exit statuses and downloaded archives."""

    def __init__(self, run_id: str, job_id: str, emit: Callable[[RunEvent], None]) -> None:
        self.run_id = run_id
        self.job_id = job_id
        self.emit = emit
        self.partial = ""
        self.exits: dict[int, int] = {}
        self.digests: dict[int, Any] = {}
        self.lines: dict[int, int] = {}
        self.archives: dict[int, list[tuple[str, str, int, bytes]]] = {}
        self.download_errors: dict[int, list[str]] = {}
        self._open: dict[int, tuple[str, str, int, list[str]]] = {}

    def feed(self, chunk: str) -> None:
        text = self.partial + chunk
        *complete, self.partial = text.split("\n")
        for line in complete:
            self.line(line.rstrip("\r"))

    def flush(self) -> None:
        if self.partial:
            self.line(self.partial)
            self.partial = ""

    def line(self, text: str) -> None:
        found = DL_LINE.match(text)
        if found:
            self._download(found.group(1), int(found.group(2)), found.group(3))
            return
        found = EXIT_LINE.match(text)
        if found:
            self.exits[int(found.group(1))] = int(found.group(2))
            return
        host, body = 0, text
        found = HOST_LINE.match(text)
        if found:
            host, body = int(found.group(1)), found.group(2)
        self.digests.setdefault(host, hashlib.sha256()).update((body + "\n").encode())
        self.lines[host] = self.lines.get(host, 0) + 1
        self.emit(
            OutputLine(
                run_id=self.run_id,
                worker=host,
                worker_name=f"{self.job_id}/w{host}",
                stream="stdout",
                text=body,
            )
        )

    def _download(self, what: str, host: int, rest: str) -> None:
        if what == "begin":
            digest, size_text, name = rest.split(" ", 2)
            self._open[host] = (name, digest, int(size_text), [])
        elif what == "data" and host in self._open:
            self._open[host][3].append(rest)
        elif what == "end" and host in self._open:
            name, digest, size, parts = self._open.pop(host)
            data = base64.b64decode("".join(parts))
            if hashlib.sha256(data).hexdigest() != digest or len(data) != size:
                self.download_errors.setdefault(host, []).append(f"{name} arrived damaged (hash mismatch)")
            else:
                self.archives.setdefault(host, []).append((name, digest, size, data))
        elif what == "error":
            self.download_errors.setdefault(host, []).append(rest)


def unpack(archive: bytes, into: Path) -> list[str]:
    """Extract one downloaded tar.gz into `into`, refusing links and anything that would leave it."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            if not (member.isfile() or member.isdir()) or not local_inside(into, into / member.name):
                raise RayError(
                    f"a downloaded archive holds {member.name!r}, which is not a plain file in place"
                )
        tar.extractall(into, members=members, filter="data")
    tops = sorted({m.name.split("/")[0] for m in members})
    return [str(into / top) for top in tops]


async def _call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kwargs)


async def _follow(client: Any, job_id: str, collector: _Collector) -> None:
    async for chunk in client.tail_job_logs(job_id):
        collector.feed(chunk)


async def run_job(
    job: RayJob,
    *,
    job_id: str,
    entrypoint: str,
    uploads: tuple[Upload, ...],
    snapshot: UploadSnapshot,
    run_id: str,
    emit: Callable[[RunEvent], None],
    cancel: asyncio.Event,
    time_limit_s: float,
    downloads_dir: Path | None,
    environ: Mapping[str, str],
    on_submitted: Callable[[str], None],
) -> list[WorkerResult]:
    """Submit the approved job, stream its log, stop it on cancel or time limit; one result per host."""
    start = time.monotonic()

    def failed(kind: ErrorKind, message: str) -> list[WorkerResult]:
        result = _result(run_id, job, job_id, 0, "failed", kind, message, None, start, None)
        emit(result)
        return [result]

    try:
        client = await _call(connect, job, environ)
    except RayError as exc:
        unreachable: ErrorKind = "unreachable" if "not reachable" in str(exc) else "setup"
        return failed(unreachable, str(exc))
    runtime_env = copy.deepcopy(job.runtime_env)
    try:
        if uploads:
            uri, data = package(uploads, snapshot)
            await _call(upload_package, client, uri, data)
            runtime_env["working_dir"] = uri
        await _call(
            client.submit_job,
            entrypoint=entrypoint,
            submission_id=job_id,
            runtime_env=runtime_env or None,
            metadata=dict(job.metadata),
            entrypoint_resources=dict(job.entrypoint_resources) or None,
            entrypoint_num_cpus=job.entrypoint_num_cpus,
        )
    except RayError as exc:
        return failed("setup", str(exc))
    except (RuntimeError, ValueError, OSError) as exc:
        return failed("setup", f"Ray refused job {job_id}: {_first_line(exc)}")
    on_submitted(job_id)
    collector = _Collector(run_id, job_id, emit)
    follower = asyncio.create_task(_follow(client, job_id, collector))
    try:
        ending = await _wait_for_end(client, job_id, cancel, start + time_limit_s)
    finally:
        broken = await _drain(follower)
        collector.flush()
        if broken:
            emit(
                OutputLine(
                    run_id=run_id,
                    worker=-1,
                    worker_name="tpu-agent",
                    stream="stderr",
                    text=f"{broken}; the whole log: ray job logs --address {job.address} {job_id}",
                )
            )
    with contextlib.suppress(RuntimeError, OSError):  # without it, the result says the state alone
        info = await _call(client.get_job_info, job_id)
        ending.exit_code = getattr(info, "driver_exit_code", None)
        ending.message = str(getattr(info, "message", "") or "")
    fetched = _unpack_all(collector, downloads_dir)
    hosts = sorted(set(collector.exits) | set(range(job.hosts if collector.exits else 1)))
    results: list[WorkerResult] = []
    for host in hosts:
        code = collector.exits.get(host, ending.exit_code if len(hosts) == 1 else None)
        state, kind, error = ending.verdict(job_id, code)
        problems = collector.download_errors.get(host, [])
        if state == "ok" and problems:
            state, kind, error = "failed", "setup", f"download: {problems[0]}"
        result = _result(
            run_id, job, job_id, host, state, kind, error, code, start, collector, fetched.get(host, [])
        )
        emit(result)
        results.append(result)
    return results


class _Ending:
    """How the job ended, as far as this side saw: Ray's last state, who stopped it, a lost cluster."""

    def __init__(self) -> None:
        self.status = "PENDING"
        self.stopped_by: ErrorKind | None = None
        self.lost: str | None = None
        self.exit_code: int | None = None
        self.message = ""

    def verdict(self, job_id: str, code: int | None) -> tuple[str, ErrorKind | None, str | None]:
        """(state, error kind, one-line error) for a host whose command exited with `code`."""
        if self.lost is not None:
            return "failed", "connection_lost", self.lost
        if self.stopped_by is not None:
            why = "cancelled" if self.stopped_by == "cancelled" else "time limit"
            state = "cancelled" if self.stopped_by == "cancelled" else "failed"
            return state, self.stopped_by, f"Ray job {job_id} stopped ({why})"
        if self.status == "SUCCEEDED" and code in (0, None):
            return "ok", None, None
        if self.status == "STOPPED":
            return "failed", "cancelled", f"Ray job {job_id} was stopped on the cluster"
        if code is None and self.status == "FAILED":
            said = self.message.splitlines()[0] if self.message else self.status
            return "failed", "setup", f"Ray job {job_id} failed: {said}"
        return "failed", "exit", f"Ray job {job_id} {self.status.lower()}, exit status {code}"


async def _wait_for_end(client: Any, job_id: str, cancel: asyncio.Event, deadline: float) -> _Ending:
    """Poll the job's state until Ray says it ended; on cancel or past the deadline, stop it first."""
    ending = _Ending()
    stop_deadline = float("inf")
    while True:
        try:
            ending.status = str(await _call(client.get_job_status, job_id))
        except (RuntimeError, OSError) as exc:
            ending.lost = f"lost the Ray cluster while job {job_id} ran: {_first_line(exc)}"
            return ending
        if ending.status in ("SUCCEEDED", "FAILED", "STOPPED"):
            return ending
        if ending.stopped_by is None and (cancel.is_set() or time.monotonic() > deadline):
            ending.stopped_by = "cancelled" if cancel.is_set() else "time_limit"
            with contextlib.suppress(RuntimeError, OSError):  # a failed stop shows as the wait below
                await _call(client.stop_job, job_id)
            stop_deadline = time.monotonic() + STOP_WAIT_S
        if time.monotonic() > stop_deadline:
            ending.lost = f"Ray did not stop job {job_id} within {STOP_WAIT_S:.0f} s"
            return ending
        if ending.stopped_by is not None:
            await asyncio.sleep(POLL_S / 2)
        else:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancel.wait(), POLL_S)


def _unpack_all(collector: _Collector, downloads_dir: Path | None) -> dict[int, list[str]]:
    """Each host's archives unpacked under `downloads_dir/w<host>`; failures go to the host's problems."""
    fetched: dict[int, list[str]] = {}
    if downloads_dir is None:
        return fetched
    for host, archives in collector.archives.items():
        for _name, _digest, _size, data in archives:
            try:
                fetched.setdefault(host, []).extend(unpack(data, downloads_dir / f"w{host}"))
            except (RayError, tarfile.TarError) as exc:
                collector.download_errors.setdefault(host, []).append(str(exc))
    return fetched


async def _drain(follower: asyncio.Task[None]) -> str:
    """Let the log stream finish (it ends with the job); '' when it did, else why it broke off."""
    try:
        await asyncio.wait_for(asyncio.shield(follower), TAIL_GRACE_S)
    except TimeoutError:
        follower.cancel()
        return f"the job's log stream was still open {TAIL_GRACE_S:.0f} s after the job ended"
    except Exception as exc:  # aiohttp and Ray raise several kinds; the run's result still stands
        return f"the job's log stream broke off: {_first_line(exc)}"
    return ""


def _result(
    run_id: str,
    job: RayJob,
    job_id: str,
    host: int,
    state: str,
    kind: ErrorKind | None,
    error: str | None,
    code: int | None,
    start: float,
    collector: _Collector | None,
    downloads: list[str] | None = None,
) -> WorkerResult:
    digest = collector.digests.get(host) if collector is not None else None
    return WorkerResult(
        run_id=run_id,
        worker=host,
        worker_name=f"{job_id}/w{host}",
        host=job.address,
        status="ok" if state == "ok" else ("cancelled" if state == "cancelled" else "failed"),
        exit_status=code,
        error_kind=kind,
        error=error,
        duration_s=round(time.monotonic() - start, 3),
        stdout_sha256=(digest or hashlib.sha256()).hexdigest(),
        stderr_sha256=hashlib.sha256(b"").hexdigest(),
        stdout_lines=collector.lines.get(host, 0) if collector is not None else 0,
        downloads=downloads or [],
    )


def check_cluster(job_or_target: RayTarget, environ: Mapping[str, str]) -> dict[str, Any]:
    """Connect to the cluster (no job is submitted): its Ray version, or RayError in one line."""
    job = build_job(job_or_target, "check", ("true",), {}, ())
    client = connect(job, environ)
    version = getattr(client, "_server_ray_version", None)
    return {"address": job.address, "ray_version": version}
