"""The `tpu-runs` MCP server, the MCP front end of `tpu_runtime.remote`: approval-gated commands on the
user's TPU VMs, SSH hosts, GKE and Ray clusters.

Thin by design: each tool calls `tpu_runtime.remote.engine.RemoteEngine` and shapes the answer; the
dialog approval flow is `tpu_runtime.remote.consent` (its refusals are reason codes, worded here for the
model), paging and stopping runs `tpu_runtime.remote.output`.

- `list_targets` -> `TargetList`: the targets in the user's targets file.
- `request_run` -> `RunRequestView`: files a request and shows exactly what would run where, with the
  digest the approval will be bound to. It runs nothing.
- `run` -> `RunView`: runs a request once the person approved it, and returns its output.
- `run_status`, `run_output`, `cancel_run`: follow and stop a run.
- `fetch_logs` -> `RunView`: the tail of log files on the workers (a read-only `tail`, same approval).

Approval. There is no tool that approves, and no argument that carries an approval. By default the
person approves in their own terminal (`tpu-agent approvals approve ID`, with their approver
passphrase, which never passes through MCP); calling `run` again then uses that signed approval and
nothing else. When the person's signed policy allows dialogs (`approvals.elicitation: true`), `run`
asks through MCP elicitation, with the SDK's resolver mechanism (a `Resolve(fn)` parameter whose
resolver returns `Elicit(message, Model)`; `ctx.elicit()` alone fails on the 2026-07-28 protocol): the
client shows the command, workers, environment (secrets by name only), uploads, time limit and digest,
and only an accept in which the person typed the digest's first characters approves
(`engine.approve_elicited`, usable only by this server process). A dialog answer comes from whatever
program the client is, which is why it is off unless the person turns it on. Decline or cancel denies
the request; both are in the audit log. Requests a policy rule pre-approved (read-only `tail`, `ls`,
`tpu-info` ...) need no question.

Style as in `mcp_servers.onboarding`: `register(server)` adds the tools to a given server,
`build_server()` makes a stand-alone one; importing this module loads no SSH or cloud libraries.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from mcp_servers._paths import ClientRoots, PathNotAllowed, allowed_folders, confine
from mcp_servers._results import error_result as _error
from mcp_servers._results import model_result as _result
from mcp_servers._results import outcome_result
from mcp_servers._server import declare_tool, make_server, serve_stdio
from tpu_runtime.remote.consent import (
    DIGEST_PREFIX_CHARS,
    Answer,
    LogReads,
    Refusal,
    approval_message,
    utc_text,
)
from tpu_runtime.remote.report import LoggedLine, OutputLine, WorkerResult
from tpu_runtime.remote.shown import shell_line
from tpu_runtime.remote.spec import display_env, places

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import Approval, RunRequest
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.output import OutputPage as LinesPage
    from tpu_runtime.remote.output import RunOutput

NAME = "tpu-runs"
REQUESTED_BY = "mcp"
DIALOG = "the MCP client's approval dialog"
"""Where the person answered, as the audit log's denial reason names it."""
RESULT_LINES = 200  # output lines a `run` result carries (the last ones); run_output pages through all
MAX_PAGE_LINES = 5000
PROGRESS_EVERY_S = 0.5  # at most one progress message per this many seconds
REQUEST_ID = r"^r-[0-9a-f]{6,32}$"
RUN_ID = r"^run-[0-9a-f]{6,32}$"

RunViewStatus = Literal[
    "awaiting_approval",  # pending: the person has not decided yet
    "approved",  # approved (by the person or a policy rule) and not started: call run
    "not_approved",  # the person accepted the dialog but the digest typed did not match; still pending
    "denied",
    "expired",
    "running",
    "succeeded",
    "failed",
    "cancelled",
    "interrupted",
]

INSTRUCTIONS = (
    "Commands on the user's Cloud TPU VMs, SSH hosts, GKE clusters and Ray clusters, each only after "
    "the person approves it. list_targets shows where commands can run. request_run files a request "
    "and shows exactly what would run where, with its digest; it runs nothing. run(request_id) asks "
    "the person to approve that exact request (an approval dialog in the client, or `tpu-agent "
    "approvals approve ID` in their own terminal when the client has no dialog) and then runs it and "
    "returns its output; run_status, run_output and cancel_run follow and stop runs; fetch_logs reads "
    "log files on the workers under the same approval. No tool approves anything: never try to approve "
    "for the person, and report a pending request as not run."
)

LIST_TARGETS_DESCRIPTION = """\
The targets in the user's targets file (TPU VMs or queued resources by project/zone/name, lists of SSH \
hosts, GKE clusters, Ray clusters by job-submission address): name, kind, where, and the number of \
workers (a Ray target's TPU hosts) when the file lists them. Read-only; \
contacts nothing. When there are none, the result names the file the person edits."""

REQUEST_RUN_DESCRIPTION = """\
File a request to run a command on a target's workers, and show exactly what would run where. Runs \
nothing and approves nothing: it resolves the workers (addresses and pinned host keys), hashes the \
files to upload, stores the request as pending and writes it to the audit log.

Returns a RunRequestView: `request_id`, the exact `command` (argv, run without a shell unless you pass \
e.g. ["sh", "-c", "..."]; it starts in the run's own folder, where the uploads land), `workers`, \
`env`, `uploads` (local file -> path in the run's folder, size, sha256), `downloads`, `time_limit_s`, \
`digest` (SHA-256 over all of it: the approval is bound to it) and `next_step`. Show it to the user, \
then call run(request_id): the person approves or declines there. A request the user's policy allows \
without a prompt (read-only tpu-info, ls, cat, tail of log folders, df, free) comes back already \
approved. Upload paths must lie inside the folders the user works in. On a Ray target the request is \
a Ray job submission (`ray_job`: entrypoint, runtime_env, resources, job id) whose working_dir is the \
uploads."""

RUN_DESCRIPTION = """\
Run a filed request on its workers once the person approves it, and return its output. Only the \
person can approve: this tool shows them the command, workers, environment, uploads, time limit and \
digest in the client's approval dialog, and runs it only if they accept and type the digest's first \
8 characters. Declining denies the request (audited); nothing runs.

If the client cannot show an approval dialog, nothing runs and the result (status awaiting_approval) \
says what the person must run in their own terminal: `tpu-agent approvals approve REQUEST_ID`. Call \
run again afterwards; it then runs with that approval only. An approval is used once and expires.

Returns a RunView: `status` (awaiting_approval, not_approved, denied, expired, running, succeeded, \
failed, cancelled), `message` (what happened and what to do next), `run_id`, per-worker results \
(exit status, signal, error kind and one-line error), and the last output lines with a worker prefix. \
Waits up to wait_s seconds for the run to end, sending progress; a longer run keeps running: follow \
it with run_output and run_status, stop it with cancel_run."""

RUN_STATUS_DESCRIPTION = """\
Where a run or a request stands. Pass a run id (run-...) or a request id (r-...): for a request it \
says whether the person approved, denied or has not decided yet, and the status of its run once \
started. Read-only."""

RUN_OUTPUT_DESCRIPTION = """\
Output lines of a run from line `since_line` on (0-based; pass the returned `next_line` to continue), \
each with its worker and stream. Waits up to wait_s seconds for new lines while the run is running, so \
calling it in a loop follows the run. Read-only."""

CANCEL_DESCRIPTION = """\
Stop a running run: the whole remote process group on every worker is killed, then each worker's \
result says whether the remote process is gone. Only runs started by this server can be cancelled \
here; a run started in a terminal is stopped there (Ctrl-C)."""

FETCH_LOGS_DESCRIPTION = """\
Read the last lines of log files on a target's workers (`tail -n LINES PATH...`, read-only) and return \
them with a worker prefix. Like run, it needs the person's approval in the client's dialog (or their \
`tpu-agent approvals approve ID` when the client has no dialog; then call fetch_logs again with the \
same arguments), unless the user's policy allows reading those log folders without a prompt. Paths are \
paths on the workers."""


logger = logging.getLogger(__name__)
T = TypeVar("T")


# ---- result models ---------------------------------------------------------------------------------
class TargetView(BaseModel):
    name: str
    kind: Literal["hosts", "tpu-vm", "gke", "ray"]
    where: str = Field(
        description="addresses, project/zone/node, kubectl context and topology, or Ray job address"
    )
    workers: int | None = Field(
        default=None, description="workers listed in the file (TPU VM workers are resolved at request time)"
    )


class TargetList(BaseModel):
    targets_file: str
    targets: list[TargetView]
    note: str | None = None


class WorkerView(BaseModel):
    index: int
    name: str
    address: str = Field(description="host:port")
    user: str
    host_key: str = Field(description="type and SHA-256 fingerprint of the pinned host key")


class UploadView(BaseModel):
    source: str = Field(description="local file")
    dest: str = Field(description="path inside the run's files/ folder on each worker")
    size: int
    sha256: str


class RunRequestView(BaseModel):
    """Everything the person is asked to approve, and its digest."""

    request_id: str
    state: str = Field(description="pending, approved, denied, expired, running or finished")
    target: str
    target_kind: str
    command: list[str] = Field(description="argv, exactly as it will run")
    command_line: str = Field(description="the same argv quoted for a POSIX shell, for display")
    workers: list[WorkerView]
    env: dict[str, str]
    uploads: list[UploadView]
    downloads: list[str]
    time_limit_s: float
    gke_manifest: str | None = Field(default=None, description="for GKE targets: the manifest applied")
    ray_job: dict[str, Any] | None = Field(
        default=None,
        description="for Ray targets: the job submission (address, submission_id, entrypoint, runtime_env, "
        "entrypoint_resources, metadata); the uploads are its working_dir",
    )
    digest: str = Field(description="SHA-256 over everything above: the approval is bound to it")
    expires_at: str = Field(description="when the request can no longer be approved (UTC)")
    approved_by: str | None = Field(default=None, description="who approved it, e.g. a policy rule")
    next_step: str


class OutputLineView(BaseModel):
    n: int = Field(description="0-based line number within the run")
    worker: int
    worker_name: str
    stream: Literal["stdout", "stderr"] | None = Field(description="None when read back from the log file")
    text: str


class RunView(BaseModel):
    """What happened to a request: its decision, and its run once started."""

    request_id: str
    run_id: str | None = None
    status: RunViewStatus
    message: str = Field(description="what happened and what to do next")
    target: str
    command_line: str
    workers_total: int = 0
    workers_done: int = 0
    workers: list[WorkerResult] = Field(default=[], description="each finished worker's result")
    output: list[OutputLineView] = Field(default=[], description="the last output lines (see run_output)")
    lines_total: int = 0
    next_line: int = Field(default=0, description="pass to run_output as since_line to read on")
    duration_s: float | None = None


class OutputPage(BaseModel):
    run_id: str
    status: RunViewStatus
    lines: list[OutputLineView]
    next_line: int
    done: bool = Field(description="the run has ended and every line has been returned")
    dropped: int = Field(default=0, description="lines no longer kept in memory before since_line")


class CancelView(BaseModel):
    run_id: str
    cancelled: bool = Field(description="the run was still running and was told to stop")
    status: RunViewStatus
    workers: list[WorkerResult] = Field(default=[], description="each worker's result after the stop")
    message: str


class RunConsent(BaseModel):
    """The approval dialog's one field: the person types the digest's first characters."""

    digest: str = Field(
        max_length=80,
        description=f"To approve exactly this run, type the first {DIGEST_PREFIX_CHARS} characters of the "
        "digest shown above (after 'sha256:'). To refuse, decline.",
    )


class _NoQuestion(BaseModel):
    """A resolver outcome that asked the person nothing, and why."""

    why: Literal["no_request", "not_pending", "no_elicitation", "terminal_only", "error"]
    error: str | None = None
    request_id: str | None = None


# ---- helpers ------------------------------------------------------------------------------------------
def _one_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def request_view(request: RunRequest) -> RunRequestView:
    from tpu_runtime.remote.targets import host_key_fingerprint

    spec = request.spec
    if request.state == "approved":
        step = f"approved by {request.decided_by}: call run(request_id={request.id!r}) to start it"
    elif request.state == "pending":
        step = (
            f"show this to the user, then call run(request_id={request.id!r}): the person approves or "
            "declines exactly this request there. Never approve it yourself"
        )
    else:
        step = f"this request is {request.state}; file a new one to run it again"
    return RunRequestView(
        request_id=request.id,
        state=request.state,
        target=spec.target,
        target_kind=spec.target_kind,
        command=list(spec.command),
        command_line=shell_line(spec.command),
        workers=[
            WorkerView(
                index=w.index,
                name=w.name,
                address=f"{w.host}:{w.port}",
                user=w.user,
                host_key=host_key_fingerprint(w.host_keys[0]) if w.host_keys else "none",
            )
            for w in spec.workers
        ],
        env=display_env(spec, quote=False),
        uploads=[
            UploadView(source=u.source, dest=u.dest, size=u.size, sha256=u.sha256) for u in spec.uploads
        ],
        downloads=[d.remote for d in spec.downloads],
        time_limit_s=spec.time_limit_s,
        gke_manifest=spec.gke.manifest if spec.gke is not None else None,
        ray_job=spec.ray.model_dump(mode="json") if spec.ray is not None else None,
        digest=request.digest,
        expires_at=utc_text(request.expires_at),
        approved_by=request.decided_by if request.state == "approved" else None,
        next_step=step,
    )


def can_elicit(ctx: Context) -> bool:
    """Whether this client can show the person a form (the SDK's own capability rule, checked first so
    a client without it gets instructions instead of a protocol error)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return False
    version = ctx.protocol_version
    from mcp_types.version import is_version_at_least

    if version is not None and is_version_at_least(version, "2026-07-28"):
        return True  # asked through the input-required round trip
    return bool(ctx.session.can_send_request)


def _line_views(first: int, lines: Sequence[OutputLine | LoggedLine]) -> list[OutputLineView]:
    """Lines of a run's output as the tools return them, numbered from `first` (a line read back from
    the log file has no stream)."""
    return [
        OutputLineView(
            n=first + i,
            worker=x.worker,
            worker_name=x.worker_name,
            stream=x.stream if isinstance(x, OutputLine) else None,
            text=x.text,
        )
        for i, x in enumerate(lines)
    ]


def _page_view(page: LinesPage) -> OutputPage:
    return OutputPage(
        run_id=page.run_id,
        status=page.state,
        lines=_line_views(page.first, page.lines),
        next_line=page.next_line,
        done=page.done,
        dropped=page.dropped,
    )


# ---- the service behind the tools -----------------------------------------------------------------------
class _Runs:
    """One engine per server, the output of runs started here, and the requests fetch_logs filed."""

    def __init__(self, engine: RemoteEngine | None) -> None:
        self._engine = engine
        self.fetches = LogReads()

    def engine(self) -> RemoteEngine:
        if self._engine is None:
            from tpu_runtime.remote.engine import RemoteEngine

            self._engine = RemoteEngine()
        return self._engine

    # -- approval -----------------------------------------------------------------------------------
    def question(self, request_id: str, ctx: Context) -> Elicit[RunConsent] | _NoQuestion:
        """What to ask the person about a request, if anything (the body acts on the answer)."""
        from tpu_runtime.remote.consent import to_ask

        found = to_ask(self.engine(), request_id, can_ask=can_elicit(ctx))
        if isinstance(found, str):
            return _NoQuestion(why=found, request_id=request_id)
        return Elicit(approval_message(found), RunConsent)

    def fetch_request(self, target: str, paths: list[str], workers: str, lines: int) -> _NoQuestion | str:
        """The request id fetch_logs uses for these arguments (see `LogReads`)."""
        from tpu_runtime.remote.approvals import ApprovalError
        from tpu_runtime.remote.policy import PolicyError
        from tpu_runtime.remote.spec import SpecError
        from tpu_runtime.remote.targets import TargetError
        from tpu_runtime.remote.tpu_api import TpuApiError

        try:
            return self.fetches.request_for(
                self.engine(), target, paths, workers, lines, f"{REQUESTED_BY}:fetch_logs"
            )
        except (TargetError, SpecError, TpuApiError, PolicyError, ApprovalError) as exc:
            return _NoQuestion(why="error", error=_one_line(exc))

    # -- running -----------------------------------------------------------------------------------
    async def run_request(
        self, request_id: str, consent: Any, ctx: Context, wait_s: float
    ) -> RunView | CallToolResult:
        """Approve from the dialog's answer if there is one, then start the run and wait for it."""
        from tpu_runtime.remote.consent import approval_to_start

        answer: Answer | None = None
        typed = ""
        if isinstance(consent, DeclinedElicitation):
            answer = "decline"
        elif isinstance(consent, CancelledElicitation):
            answer = "cancel"
        elif isinstance(consent, AcceptedElicitation) and isinstance(consent.data, RunConsent):
            answer, typed = "accept", consent.data.digest
        unasked = consent.why if isinstance(consent, _NoQuestion) else None
        ready = approval_to_start(
            self.engine(), request_id, unasked=unasked, answer=answer, typed=typed, dialog=DIALOG
        )
        if isinstance(ready, Refusal):
            return _refused(ready)
        return await self.start(*ready, ctx, wait_s)

    async def start(
        self, request: RunRequest, approval: Approval, ctx: Context, wait_s: float
    ) -> RunView | CallToolResult:
        from tpu_runtime.remote.approvals import ApprovalError

        engine = self.engine()
        try:
            run_id = await engine.start(approval, actor=REQUESTED_BY)
        except ApprovalError as exc:
            return _error(str(exc))
        output = engine.keep_output(run_id, request)
        await self.wait(output, ctx, wait_s)
        return self.view(output)

    async def wait(self, output: RunOutput, ctx: Context, wait_s: float) -> None:
        """Wait for the run to end (at most `wait_s`), sending progress as lines and results arrive."""

        async def report(progress: float, message: str) -> None:
            with contextlib.suppress(Exception):  # progress is best effort
                await ctx.report_progress(progress, None, message)

        await output.wait(wait_s, report, PROGRESS_EVERY_S)

    def view(self, output: RunOutput) -> RunView:
        request = output.request
        result = output.result
        status, message = output.summary(self.engine())
        tail = _line_views(*output.tail(RESULT_LINES))
        return RunView(
            request_id=request.id,
            run_id=output.run_id,
            status=status,
            message=message,
            target=request.spec.target,
            command_line=shell_line(request.spec.command),
            workers_total=output.workers_total,
            workers_done=len(output.workers),
            workers=list(output.workers),
            output=tail,
            lines_total=output.total,
            next_line=output.total,
            duration_s=result.duration_s if result is not None else None,
        )

    def status(self, run_or_request: str) -> RunView | CallToolResult:
        from tpu_runtime.remote.approvals import ApprovalError
        from tpu_runtime.remote.runs import run_for_request

        engine = self.engine()
        if run_or_request.startswith("r-"):
            try:
                request = engine.get_request(run_or_request)
            except ApprovalError as exc:
                return _error(str(exc))
            run_id = run_for_request(engine.store, request.id)
            if run_id is None:
                return _request_status(request)
            return self._run_status(run_id)
        return self._run_status(run_or_request)

    def _run_status(self, run_id: str) -> RunView | CallToolResult:
        output = self.engine().kept_output(run_id)
        if output is not None:
            return self.view(output)
        engine = self.engine()
        stored = engine.status(run_id)
        if stored is None:
            return _error(f"no run {run_id!r}")
        request = engine.get_request(stored.request_id)
        lines = _line_views(0, engine.logged_lines(run_id))
        result = stored.result
        return RunView(
            request_id=request.id,
            run_id=run_id,
            status=stored.state,
            message=f"run {run_id} {stored.state} (started outside this server; output read from its log)",
            target=request.spec.target,
            command_line=shell_line(request.spec.command),
            workers_total=stored.workers_total or places(request.spec),
            workers_done=stored.workers_done,
            workers=list(result.workers) if result is not None else [],
            output=lines[-RESULT_LINES:],
            lines_total=len(lines),
            next_line=len(lines),
            duration_s=result.duration_s if result is not None else None,
        )

    async def output_page(
        self, run_id: str, since: int, limit: int, wait_s: float
    ) -> OutputPage | CallToolResult:
        page = await self.engine().output_page(run_id, since, limit, wait_s)
        return _error(f"no run {run_id!r}") if page is None else _page_view(page)

    async def cancel(self, run_id: str) -> CancelView | CallToolResult:
        from tpu_runtime.remote.output import stop_run

        stopped = await stop_run(self.engine(), run_id)
        if isinstance(stopped, str):
            return _error(stopped)
        return CancelView(
            run_id=run_id,
            cancelled=stopped.cancelled,
            status=stopped.state,
            workers=stopped.workers,
            message=stopped.message,
        )


def _refused(refusal: Refusal) -> RunView | CallToolResult:
    message = _refusal_text(refusal)
    if refusal.status is None or refusal.request is None:
        return _error(message)
    return _view(refusal.request, refusal.status, message)


def _refusal_text(refusal: Refusal) -> str:
    """What the model is told about a refusal: what happened, and what it (or the person) does next."""
    reason, request_id = refusal.reason, refusal.request.id if refusal.request is not None else ""
    if reason == "unknown_request":
        return f"{refusal.detail}: file one with request_run first"
    if reason in ("no_dialog", "terminal_only"):
        why = (
            "this MCP client cannot show an approval dialog"
            if reason == "no_dialog"
            else "the person's policy requires approval in their own terminal"
        )
        return (
            f"{why}, so nothing ran. Ask the person to run, in their own terminal:  "
            f"tpu-agent approvals approve {request_id}  (it shows the request and its digest and "
            "asks for their passphrase), then call run again with the same request_id. Never "
            "run that command yourself"
        )
    if reason in ("declined", "cancelled"):
        return (
            f"the person {reason} request {request_id} in the approval dialog; nothing ran. Do not retry "
            "it unless they ask; file a new request for a changed command"
        )
    if reason == "approval_failed":
        return f"not approved: {refusal.detail}"
    if reason == "wrong_digest":
        digest = refusal.request.digest if refusal.request is not None else ""
        return (
            f"not approved: the characters typed ({refusal.detail!r}) are not the start of the "
            f"digest {digest}; nothing ran. Call run again to ask the person again"
        )
    if reason == "already_run":
        return (
            f"request {request_id} was already run as {refusal.run_id}; an approval is used once. "
            f"See run_status({refusal.run_id!r}), or file a new request to run it again"
        )
    if reason in ("denied", "expired"):
        return f"request {request_id} is {reason}; nothing ran. File a new request to run it"
    if reason == "lapsed":
        return f"request {request_id} expired; file a new one"
    state = refusal.request.state if refusal.request is not None else "unknown"
    return (
        f"request {request_id} is {state} and has no usable approval (approvals expire "
        "after 10 minutes and are used once): file a new request"
    )


def _view(request: RunRequest, status: RunViewStatus, message: str) -> RunView:
    return RunView(
        request_id=request.id,
        status=status,
        message=message,
        target=request.spec.target,
        command_line=shell_line(request.spec.command),
        workers_total=places(request.spec),
    )


def _request_status(request: RunRequest) -> RunView:
    """A request that has not started a run: where the person's decision stands."""
    from tpu_runtime.remote.consent import standing

    status = standing(request)
    if status == "approved":
        return _view(request, status, f"request {request.id} is approved and not started: call run")
    if status == "awaiting_approval":
        message = (
            f"request {request.id}: the person has not decided yet; call run to ask them (or they run "
            f"`tpu-agent approvals approve {request.id}` in their own terminal)"
        )
        return _view(request, status, message)
    return _view(request, status, f"request {request.id} is {status}; nothing ran. File a new request")


def _targets(engine: RemoteEngine) -> TargetList:
    from tpu_runtime.remote.targets import GkeTarget, HostsTarget, RayTarget

    listed: list[TargetView] = []
    for name, target in sorted(engine.targets().items()):
        if isinstance(target, HostsTarget):
            where = ", ".join(f"{h.name}={h.host}:{h.port}" for h in target.hosts)
            listed.append(TargetView(name=name, kind="hosts", where=where, workers=len(target.hosts)))
        elif isinstance(target, GkeTarget):
            where = f"kubectl context {target.context}, {target.accelerator} {target.topology}"
            listed.append(TargetView(name=name, kind="gke", where=where))
        elif isinstance(target, RayTarget):
            where = f"Ray job API {target.address}, TPU x{target.tpu_chips_per_host} per host"
            listed.append(TargetView(name=name, kind="ray", where=where, workers=target.tpu_hosts))
        else:
            node = target.name or f"queued resource {target.queued_resource}"
            listed.append(
                TargetView(name=name, kind="tpu-vm", where=f"{target.project}/{target.zone}/{node}")
            )
    note = None
    if not listed:
        note = (
            f"no targets yet: the person adds them to {engine.targets_path} (see `tpu-agent targets --help`)"
        )
    return TargetList(targets_file=str(engine.targets_path), targets=listed, note=note)


_services: weakref.WeakKeyDictionary[MCPServer, _Runs] = weakref.WeakKeyDictionary()
"""The run service of each server `register` added the tools to (resolvers find theirs through ctx)."""


def _service(ctx: Context) -> _Runs:
    return _services[ctx.mcp_server]


def _ask_about_request(request_id: str, ctx: Context) -> Elicit[RunConsent] | _NoQuestion:
    """Resolver of `run`'s consent: the approval question for the request, or why none is asked."""
    return _service(ctx).question(request_id, ctx)


async def _ask_about_fetch(
    target: str, paths: list[str], workers: str, lines: int, ctx: Context
) -> Elicit[RunConsent] | _NoQuestion:
    """Resolver of `fetch_logs`' consent: files (or reuses) its read request, then asks about it."""
    runs = _service(ctx)
    found = await anyio.to_thread.run_sync(lambda: runs.fetch_request(target, paths, workers, lines))
    if isinstance(found, _NoQuestion):
        return found
    return runs.question(found, ctx)


RunAnswer = Annotated[ElicitationResult[RunConsent], Resolve(_ask_about_request)]
"""The person's answer in the approval dialog (filled by the SDK before `run` runs; never an argument)."""
FetchAnswer = Annotated[ElicitationResult[RunConsent], Resolve(_ask_about_fetch)]


TargetName = Annotated[str, Field(min_length=1, max_length=200, description="a name from list_targets")]
"""The `target` argument of the tools that run on one."""
Workers = Annotated[
    str, Field(pattern=r"^(all|\d+(,\d+)*)$", description="all, one index, or a comma list like 0,2")
]
"""Which of a target's workers a command runs on (`all` unless given)."""


class UploadItem(BaseModel):
    """A local file or folder to copy into the run's folder on every worker."""

    path: str = Field(min_length=1, description="local file or folder, inside the folders the user works in")
    dest: str | None = Field(
        default=None, description="path inside the run's files/ folder (default: the file's own name)"
    )


run_tool = functools.partial(declare_tool, open_world=True)
"""Every run tool reaches past this machine: the user's TPU VMs, SSH hosts and clusters."""


def register(server: MCPServer, engine: RemoteEngine | None = None) -> None:
    """Add the run tools to `server`. `engine` defaults to one over the user's config and state."""
    runs = _Runs(engine)
    user_interaction = {"anthropic/requiresUserInteraction": True}

    _services[server] = runs

    async def in_thread(fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

    @run_tool(server, "list_targets", "List run targets", LIST_TARGETS_DESCRIPTION)
    async def list_targets() -> Annotated[CallToolResult, TargetList]:
        from tpu_runtime.remote.targets import TargetError

        try:
            return _result(await in_thread(lambda: _targets(runs.engine())))
        except TargetError as exc:
            return _error(str(exc))

    @run_tool(
        server,
        "request_run",
        "Request a run on TPU workers (runs nothing)",
        REQUEST_RUN_DESCRIPTION,
        read_only=False,
        idempotent=False,
    )
    async def request_run(
        target: TargetName,
        argv: Annotated[
            list[str],
            Field(
                min_length=1,
                max_length=512,
                description='the command as an argv list, e.g. ["python", "train.py"]',
            ),
        ],
        roots: ClientRoots,
        workers: Workers = "all",
        env: Annotated[
            dict[str, str],
            Field(max_length=64, description="plain environment variables for the command (no credentials)"),
        ] = {},  # noqa: B006  (pydantic copies defaults; it is never mutated)
        secret_env: Annotated[
            list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]],
            Field(
                max_length=32,
                description="names of secrets (e.g. HF_TOKEN) taken from the environment this server runs "
                "in when the run starts; values are never shown, stored or passed as arguments",
            ),
        ] = [],  # noqa: B006
        uploads: Annotated[
            list[UploadItem],
            Field(max_length=256, description="local files or folders to copy to each worker"),
        ] = [],  # noqa: B006
        downloads: Annotated[
            list[Annotated[str, Field(min_length=1)]],
            Field(max_length=64, description="remote files or folders fetched back after the command"),
        ] = [],  # noqa: B006
        time_limit_s: Annotated[
            float, Field(gt=0, le=7 * 24 * 3600, description="seconds before the command is stopped")
        ] = 600.0,
    ) -> Annotated[CallToolResult, RunRequestView]:
        from tpu_runtime.remote.approvals import ApprovalError
        from tpu_runtime.remote.policy import PolicyError
        from tpu_runtime.remote.spec import ENV_NAME, SpecError
        from tpu_runtime.remote.targets import TargetError
        from tpu_runtime.remote.tpu_api import TpuApiError

        for key, value in env.items():
            if not ENV_NAME.match(key) or "\x00" in value:
                return _error(
                    f"environment variable {key!r}: the name must be letters, digits and underscores, not "
                    "starting with a digit, and the value must have no NUL byte"
                )
        try:
            allowed = allowed_folders(roots)
            local = [(confine(item.path, allowed), item.dest) for item in uploads]
        except PathNotAllowed as exc:
            return _error(str(exc))

        def file_it() -> RunRequest:
            return runs.engine().request_run(
                target,
                argv,
                workers=workers,
                env=env,
                secret_env=secret_env,
                uploads=local,
                downloads=downloads,
                time_limit_s=time_limit_s,
                requested_by=REQUESTED_BY,
            )

        try:
            request = await in_thread(file_it)
        except (TargetError, SpecError, TpuApiError, PolicyError, ApprovalError) as exc:
            return _error(_one_line(exc))
        except ValueError as exc:  # pydantic checks of the spec (env names, NUL bytes)
            return _error(f"bad request: {_one_line(exc)}")
        return _result(request_view(request))

    @run_tool(
        server,
        "run",
        "Run an approved request on TPU workers",
        RUN_DESCRIPTION,
        read_only=False,
        destructive=True,
        idempotent=False,
        meta=user_interaction,
    )
    async def run(
        request_id: Annotated[str, Field(pattern=REQUEST_ID, description="the id request_run returned")],
        ctx: Context,
        consent: RunAnswer,
        wait_s: Annotated[
            float, Field(ge=0, le=600, description="seconds to wait for the run to end before returning")
        ] = 120.0,
    ) -> Annotated[CallToolResult, RunView]:
        outcome = _unwrap_plain(consent)
        view = await runs.run_request(request_id, outcome, ctx, wait_s)
        return outcome_result(view)

    @run_tool(server, "run_status", "Status of a run or request", RUN_STATUS_DESCRIPTION)
    async def run_status(
        run_id: Annotated[
            str,
            Field(
                pattern=f"{RUN_ID}|{REQUEST_ID}",
                description="a run id (run-...) or a request id (r-...)",
            ),
        ],
    ) -> Annotated[CallToolResult, RunView]:
        view = await in_thread(lambda: runs.status(run_id))
        return outcome_result(view)

    @run_tool(server, "run_output", "Output lines of a run", RUN_OUTPUT_DESCRIPTION)
    async def run_output(
        run_id: Annotated[str, Field(pattern=RUN_ID, description="the run id run returned")],
        since_line: Annotated[int, Field(ge=0, description="first line to return (0-based)")] = 0,
        max_lines: Annotated[
            int, Field(ge=1, le=MAX_PAGE_LINES, description="lines to return at most")
        ] = 500,
        wait_s: Annotated[
            float, Field(ge=0, le=60, description="while running: seconds to wait for new lines")
        ] = 10.0,
    ) -> Annotated[CallToolResult, OutputPage]:
        page = await runs.output_page(run_id, since_line, max_lines, wait_s)
        return outcome_result(page)

    @run_tool(
        server, "cancel_run", "Cancel a running run", CANCEL_DESCRIPTION, read_only=False, destructive=True
    )
    async def cancel_run(
        run_id: Annotated[str, Field(pattern=RUN_ID, description="the run id to stop")],
    ) -> Annotated[CallToolResult, CancelView]:
        view = await runs.cancel(run_id)
        return outcome_result(view)

    @run_tool(
        server,
        "fetch_logs",
        "Read log files on TPU workers",
        FETCH_LOGS_DESCRIPTION,
        idempotent=False,
        meta=user_interaction,
    )
    async def fetch_logs(
        target: TargetName,
        paths: Annotated[
            list[
                Annotated[str, Field(min_length=1, max_length=1024, pattern=r"^[^-\x00-\x1f][^\x00-\x1f]*$")]
            ],
            Field(min_length=1, max_length=16, description="log file paths on the workers"),
        ],
        ctx: Context,
        consent: FetchAnswer,
        workers: Workers = "all",
        lines: Annotated[int, Field(ge=1, le=100_000, description="lines from the end of each file")] = 200,
        wait_s: Annotated[float, Field(ge=0, le=600, description="seconds to wait for the read")] = 60.0,
    ) -> Annotated[CallToolResult, RunView]:
        outcome = _unwrap_plain(consent)
        if isinstance(outcome, _NoQuestion) and outcome.why == "error":
            return _error(outcome.error or "fetch_logs could not file its request")
        request_id = runs.fetches.known(target, paths, workers, lines)
        if request_id is None:
            return _error("fetch_logs could not file its request")
        view = await runs.run_request(request_id, outcome, ctx, wait_s)
        return outcome_result(view)


def _unwrap_plain(consent: Any) -> Any:
    """The resolver's outcome: an elicitation answer, or the `_NoQuestion` it returned instead of asking."""
    if isinstance(consent, AcceptedElicitation) and isinstance(consent.data, _NoQuestion):
        return consent.data
    return consent


def build_server(engine: RemoteEngine | None = None) -> MCPServer:
    """A stand-alone `tpu-runs` server."""
    return make_server(NAME, INSTRUCTIONS, lambda server: register(server, engine))


if __name__ == "__main__":
    serve_stdio(build_server)
