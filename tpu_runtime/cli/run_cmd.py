"""`tpu-agent targets|run|approvals|audit`: approval-gated commands on TPU VMs and GKE, and their audit log.

Approval comes only from the person: `run` and `approvals approve` ask on the terminal they were started
from, and a yes counts only with the passphrase of the person's approver key (`approver init`), which
signs the approval. A program that fakes a terminal can type "yes" but not the passphrase, so a coding
agent's shell can request a run but cannot approve it. Heavy libraries (asyncssh, google-cloud-tpu) load
inside the commands, never at import.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpu_runtime.cli.consoles import make_console
from tpu_runtime.errors import (
    EXIT_DENIED,
    EXIT_FAILED,
    EXIT_PENDING,
    BadInput,
    Denied,
    ExternalError,
    TpuAgentError,
)
from tpu_runtime.remote.targets_example import TARGETS_EXAMPLE

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import Approval, RunRequest
    from tpu_runtime.remote.approver import UnlockedApprover
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.report import RunResult

out = make_console(highlight=False)
err = make_console(stderr=True, highlight=False)

# exit codes: 1 failed, 2 bad input, 3 the request waits for the person's approval, 4 denied

targets_app = typer.Typer(
    help="Where commands may run: TPU VMs, SSH hosts, GKE clusters, Ray clusters. They live in targets.yaml "
    "in your tpu-agent folder (~/.config/tpu-agent, or $TPU_AGENT_HOME), written by you.",
    epilog="An example targets.yaml, one entry of each kind:\n\n\b\n" + TARGETS_EXAMPLE,
    no_args_is_help=True,
)
approvals_app = typer.Typer(help="Run requests waiting for your decision.", no_args_is_help=True)
audit_app = typer.Typer(
    help="The append-only, hash-chained log of requests, decisions and results.", no_args_is_help=True
)
approver_app = typer.Typer(
    help="Your approver key: the passphrase-protected key that signs every approval.", no_args_is_help=True
)


def _engine() -> RemoteEngine:
    from tpu_runtime.remote.engine import RemoteEngine

    return RemoteEngine()


def _on_terminal() -> bool:
    return sys.stdin.isatty() and sys.stderr.isatty()


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def _request_json(request: RunRequest) -> dict[str, Any]:
    from tpu_runtime.remote.spec import display_env

    data = request.model_dump(mode="json")
    data["spec"]["env"] = display_env(request.spec, quote=False)
    return data


# ---- targets -------------------------------------------------------------------------------------
@targets_app.command("list")
def targets_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Targets in your targets file.  Example: tpu-agent targets list"""
    from rich.table import Table

    engine = _engine()
    targets = engine.targets()  # a TargetError: exit 2 at the CLI's boundary
    if as_json:
        _emit_json({name: t.model_dump(mode="json") for name, t in targets.items()})
        return
    if not targets:
        err.print(f"no targets yet: add them to {engine.targets_path} (see `tpu-agent targets --help`)")
        return
    table = Table("name", "kind", "where")
    for name, t in sorted(targets.items()):
        if t.kind == "tpu-vm":
            where = f"{t.project}/{t.zone}/{t.name or 'queued:' + str(t.queued_resource)}"
        elif t.kind == "hosts":
            where = ", ".join(f"{h.name}={h.host}:{h.port}" for h in t.hosts)
        elif t.kind == "ray":
            where = f"{t.address} TPU x{t.tpu_chips_per_host}" + (
                f" on {t.tpu_hosts} hosts of {t.tpu_pod_type}" if t.tpu_hosts > 1 else ""
            )
        else:
            where = f"{t.context} {t.accelerator} {t.topology}"
        table.add_row(name, t.kind, where)
    out.print(table)


def _resolve(engine: RemoteEngine, name: str) -> Any:
    from tpu_runtime.remote.targets import GkeTarget, RayTarget, resolve_workers

    # a TargetError or TpuApiError is the caller's to fix: exit 2 at the CLI's boundary
    target = engine.target(name)
    workers = () if isinstance(target, GkeTarget | RayTarget) else resolve_workers(target, engine.tpu_api)
    return target, workers


@targets_app.command("show")
def targets_show(
    name: Annotated[str, typer.Argument(help="target name")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """A target's settings and its workers with pinned host keys.  Example: tpu-agent targets show my-v6e"""
    from rich.table import Table

    from tpu_runtime.remote.targets import host_key_fingerprint

    engine = _engine()
    target, workers = _resolve(engine, name)
    if as_json:
        _emit_json(
            {
                "target": target.model_dump(mode="json"),
                "workers": [w.model_dump(mode="json") for w in workers],
            }
        )
        return
    out.print(f"[bold]{name}[/] ({target.kind})")
    for key, value in target.model_dump(exclude={"hosts", "kind"}).items():
        out.print(f"  {key}: {value}", markup=False)
    if workers:
        table = Table("worker", "name", "address", "user", "pinned host key")
        for w in workers:
            table.add_row(
                str(w.index), w.name, f"{w.host}:{w.port}", w.user, host_key_fingerprint(w.host_keys[0])
            )
        out.print(table)


@targets_app.command("check")
def targets_check(
    name: Annotated[str, typer.Argument(help="target name")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Connect to every worker (handshake, pinned host key, login; no command runs).

    Example: tpu-agent targets check my-v6e
    """
    from rich.table import Table

    from tpu_runtime.remote.targets import GkeTarget, RayTarget

    engine = _engine()
    target, workers = _resolve(engine, name)
    if isinstance(target, GkeTarget):
        _check_gke(target, as_json)
        return
    if isinstance(target, RayTarget):
        _check_ray(engine, target, as_json)
        return
    import asyncio

    from tpu_runtime.remote.ssh_exec import check_workers

    with err.status(f"connecting to {len(workers)} worker(s)"):
        checks = asyncio.run(
            check_workers(workers, target.identity_file, target.connect_timeout_s, target.max_concurrency)
        )
    rows = [
        {
            "worker": w.index,
            "name": w.name,
            "address": f"{w.host}:{w.port}",
            "ok": failure is None,
            "seconds": round(seconds, 3),
            "error_kind": failure.kind if failure else None,
            "error": str(failure) if failure else None,
        }
        for w, seconds, failure in checks
    ]
    if as_json:
        _emit_json(rows)
    else:
        table = Table("worker", "name", "address", "result", "time")
        for r in rows:
            verdict = "[green]ok[/]" if r["ok"] else f"[red]{r['error_kind']}[/]: {r['error']}"
            table.add_row(
                str(r["worker"]), str(r["name"]), str(r["address"]), verdict, f"{r['seconds']:.2f} s"
            )
        out.print(table)
    if not all(r["ok"] for r in rows):
        raise typer.Exit(EXIT_FAILED)


def _check_ray(engine: RemoteEngine, target: Any, as_json: bool) -> None:
    """Reach the cluster's job API (no job is submitted): its Ray version, or one line saying why not."""
    from tpu_runtime.remote.ray_jobs import RayError, check_cluster

    try:
        found = check_cluster(target, engine.environ)
    except RayError as exc:
        if as_json:
            _emit_json({"ok": False, "error": str(exc)})
            raise typer.Exit(EXIT_FAILED) from None
        raise
    if as_json:
        _emit_json({"ok": True, **found})
    else:
        out.print(f"Ray {found['ray_version']} job API at {found['address']}: ok", markup=False)


def _check_gke(target: Any, as_json: bool) -> None:
    import subprocess

    args = [
        target.kubectl,
        "--context",
        target.context,
        "get",
        "nodes",
        "-l",
        f"cloud.google.com/gke-tpu-accelerator={target.accelerator},cloud.google.com/gke-tpu-topology={target.topology}",
        "-o",
        "name",
    ]
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise ExternalError(f"cannot run {target.kubectl}: {exc}") from None
    nodes = done.stdout.split()
    if as_json:
        _emit_json(
            {"ok": done.returncode == 0 and bool(nodes), "nodes": nodes, "error": done.stderr.strip() or None}
        )
    elif done.returncode != 0:
        err.print(done.stderr.strip(), markup=False)
    else:
        out.print(f"{len(nodes)} TPU node(s) with {target.accelerator} {target.topology}", markup=False)
    if done.returncode != 0 or not nodes:
        raise typer.Exit(EXIT_FAILED)


# ---- run -----------------------------------------------------------------------------------------
def _parse_env(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise BadInput(f"--env takes NAME=VALUE, got {item!r}")
        env[key] = value
    return env


def _parse_uploads(items: list[str]) -> list[tuple[Path, str | None]]:
    uploads: list[tuple[Path, str | None]] = []
    for item in items:
        local, sep, dest = item.partition(":")
        uploads.append((Path(local), dest if sep else None))
    return uploads


def _ask(engine: RemoteEngine, request: RunRequest) -> UnlockedApprover | None:
    """Show the request; on "yes", the passphrase unlocks the key that signs it. None: not approved."""
    from tpu_runtime.cli.approval_prompt import unlock_key
    from tpu_runtime.cli.render.run.terminal import render_request

    render_request(request, err)
    answer = typer.prompt("Run this exactly as shown? Type yes to approve", default="no", err=True)
    if answer.strip().lower() != "yes":
        return None
    return unlock_key(engine)  # no key, a wrong passphrase, no terminal: Denied, exit 4 at the boundary


def _wait_for_approval(engine: RemoteEngine, request: RunRequest, wait_s: float) -> Approval | None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        approval = engine.approval_for(request.id)
        if approval is not None:
            return approval
        if engine.get_request(request.id).state not in ("pending", "approved"):
            return None
        time.sleep(1.0)
    return None


async def _execute(engine: RemoteEngine, approval: Approval, as_json: bool) -> RunResult:
    import asyncio

    from tpu_runtime.remote.report import OutputLine, WorkerResult

    run_id = await engine.start(approval, actor="cli")
    loop = asyncio.get_running_loop()
    handled = False
    with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # only the main thread can
        loop.add_signal_handler(signal.SIGINT, lambda: engine.cancel(run_id))  # Ctrl-C stops the remote side
        handled = True
    try:
        async for event in engine.stream(run_id):
            if as_json:
                _emit_json(event.model_dump(mode="json"))
            elif isinstance(event, OutputLine):
                stream = sys.stdout if event.stream == "stdout" else sys.stderr
                stream.write(event.prefixed() + "\n")
                stream.flush()
            elif isinstance(event, WorkerResult) and event.status != "ok":
                err.print(
                    f"[red]worker {event.worker} ({event.worker_name}): {event.error_kind}[/]: {event.error}"
                )
        return await engine.wait(run_id)
    finally:
        if handled:
            loop.remove_signal_handler(signal.SIGINT)
        await engine.aclose()


def _report(result: RunResult, as_json: bool) -> None:
    if as_json:
        return
    from rich.table import Table

    table = Table(
        "worker", "name", "status", "exit", "error", "time", title=f"run {result.run_id}: {result.state}"
    )
    for w in result.workers:
        table.add_row(
            str(w.worker),
            w.worker_name,
            w.status,
            "" if w.exit_status is None else str(w.exit_status),
            w.error or "",
            f"{w.duration_s:.2f} s",
        )
    err.print(table)


def run(
    command: Annotated[
        list[str] | None, typer.Argument(help="the command and its arguments, after --")
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="target name from your targets file")
    ] = None,
    worker: Annotated[str, typer.Option(help="all, one index, or a comma list like 0,2")] = "all",
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="NAME=VALUE for the command")] = None,
    secret_env: Annotated[
        list[str] | None,
        typer.Option(
            "--secret-env",
            help="NAME of a secret in your environment (e.g. HF_TOKEN): sent to the workers, never stored",
        ),
    ] = None,
    upload: Annotated[
        list[str] | None,
        typer.Option(
            help="LOCAL[:DEST] copied into the run's folder on each worker (a Ray job's working_dir); "
            "DIR:. puts a folder's files at its top"
        ),
    ] = None,
    download: Annotated[
        list[str] | None, typer.Option(help="remote file or folder fetched back after the command")
    ] = None,
    time_limit: Annotated[float, typer.Option(min=1, help="seconds before the command is stopped")] = 600.0,
    wait: Annotated[
        float,
        typer.Option(min=0, help="without a terminal: seconds to wait for `tpu-agent approvals approve`"),
    ] = 0.0,
    request: Annotated[str | None, typer.Option(help="run an already approved request by id")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print events as JSON lines")] = False,
) -> None:
    """Run a command on a target's workers once you approve it.

    Example: tpu-agent run --target my-v6e --worker all --upload train.py -- python train.py --steps 10
    """
    from tpu_runtime.cli.render.run.terminal import render_request

    engine = _engine()
    # an approval, spec, target or Cloud TPU API error is the caller's to fix: exit 2 at the boundary
    if request:
        req = engine.get_request(request)
    else:
        if not target:
            raise BadInput("--target is required (see `tpu-agent targets list`)")
        if not command:
            raise BadInput("no command: put it after --, e.g. tpu-agent run -t T -- tpu-info")
        req = engine.request_run(
            target,
            command,
            workers=worker,
            env=_parse_env(env or []),
            secret_env=secret_env or [],
            uploads=_parse_uploads(upload or []),
            downloads=download or [],
            time_limit_s=time_limit,
            requested_by="cli",
        )
    approval = engine.approval_for(req.id)
    if approval is None and req.state == "pending":
        if _on_terminal():
            key = _ask(engine, req)
            if key is None:
                engine.deny(req.id, _approver("tty-prompt"), "declined at the prompt")
                raise Denied(f"request {req.id} denied")
            approval = engine.approve(req.id, _approver("tty-prompt"), req.digest, via="tty-prompt", key=key)
        else:
            if as_json:
                _emit_json({"type": "pending", "request": _request_json(req)})
            else:
                render_request(req, err)
            err.print(
                f"waiting for approval: in your own terminal run  tpu-agent approvals approve {req.id}",
                markup=False,
            )
            approval = _wait_for_approval(engine, req, wait) if wait else None
            if approval is None:
                raise typer.Exit(EXIT_PENDING)
    if approval is None:
        raise Denied(f"request {req.id} is {req.state} and has no usable approval")
    import asyncio

    result = asyncio.run(_execute(engine, approval, as_json))
    _report(result, as_json)
    if not result.ok:
        raise typer.Exit(EXIT_FAILED)


def _approver(via: str) -> str:
    from tpu_runtime.remote.engine import whoami

    return whoami(via)


# ---- approvals -----------------------------------------------------------------------------------
@approvals_app.command("list")
def approvals_list(
    show_all: Annotated[bool, typer.Option("--all", help="every request, not only pending ones")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Requests waiting for you.  Example: tpu-agent approvals list"""
    from rich.table import Table
    from rich.text import Text

    from tpu_runtime.remote.shown import printable, shell_line
    from tpu_runtime.remote.spec import places

    engine = _engine()
    requests = engine.list_requests(() if show_all else ("pending",))
    if as_json:
        _emit_json([_request_json(r) for r in requests])
        return
    if not requests:
        err.print("nothing waiting for approval")
        return
    now = time.time()
    table = Table("id", "state", "target", "workers", "command", "age")
    for r in requests:
        command = shell_line(r.spec.command)
        table.add_row(
            r.id,
            r.state,
            Text(printable(r.spec.target)),
            str(places(r.spec)),
            Text(command if len(command) <= 60 else command[:59] + "…"),
            f"{(now - r.created_at) / 60:.0f} min",
        )
    out.print(table)


@approvals_app.command("show")
def approvals_show(
    request_id: Annotated[str, typer.Argument(help="request id, e.g. r-3fa9c01b2e")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
    raw: Annotated[
        bool, typer.Option(help="also print the exact wrapper script sent to each worker")
    ] = False,
) -> None:
    """Everything a request would run.  Example: tpu-agent approvals show r-3fa9c01b2e"""
    from tpu_runtime.cli.render.run.terminal import render_request

    req = _engine().get_request(request_id)  # an unknown id is an ApprovalError: exit 2 at the boundary
    if as_json:
        _emit_json(_request_json(req))
        return
    render_request(req, out)
    if raw and req.spec.script:
        out.print(req.spec.script, markup=False)


@approvals_app.command("approve")
def approvals_approve(request_id: Annotated[str, typer.Argument(help="request id")]) -> None:
    """Approve a request after reading it: type yes, then your approver passphrase (your terminal only).

    Example: tpu-agent approvals approve r-3fa9c01b2e
    """
    from tpu_runtime.remote.approvals import APPROVAL_TTL_S

    if not _on_terminal():
        raise Denied("approving needs your terminal (stdin and stderr on a TTY); nothing was approved")
    engine = _engine()
    # an ApprovalError: exit 2 at the boundary; a refused key: Denied, exit 4
    req = engine.get_request(request_id)
    if req.state != "pending":
        raise BadInput(f"request {request_id} is {req.state}, not pending")
    key = _ask(engine, req)
    if key is None:
        err.print("not approved")
        raise typer.Exit(EXIT_DENIED)
    approval = engine.approve(request_id, _approver("tty"), req.digest, via="approvals-cli", key=key)
    err.print(f"approved {request_id} ({approval.id}); usable once within {APPROVAL_TTL_S / 60:.0f} minutes")


@approvals_app.command("deny")
def approvals_deny(
    request_id: Annotated[str, typer.Argument(help="request id")],
    reason: Annotated[str, typer.Option(help="why, for the audit log")] = "",
) -> None:
    """Refuse a request.  Example: tpu-agent approvals deny r-3fa9c01b2e --reason 'wrong target'"""
    _engine().deny(request_id, _approver("cli"), reason)  # ApprovalError: exit 2 at the boundary
    err.print(f"denied {request_id}")


# ---- audit ---------------------------------------------------------------------------------------
@audit_app.command("show")
def audit_show(
    subject: Annotated[str | None, typer.Option("--id", help="only rows about this request or run")] = None,
    limit: Annotated[int, typer.Option(min=1, help="the last N rows")] = 50,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """The audit log, oldest first.  Example: tpu-agent audit show --id r-3fa9c01b2e"""
    from rich.table import Table

    from tpu_runtime.remote import audit

    engine = _engine()
    with engine.store.read() as conn:
        found = audit.rows(conn, subject, limit)
    if as_json:
        _emit_json([r.model_dump(mode="json") for r in found])
        return
    table = Table("seq", "time (UTC)", "event", "about", "by", "details")
    for r in found:
        details = json.dumps(r.payload, separators=(",", ":"))
        table.add_row(str(r.seq), r.ts[:19], r.kind, r.subject, r.actor, details[:80])
    out.print(table)


@audit_app.command("anchor")
def audit_anchor() -> None:
    """Print the log's head as SEQ:HASH; keep it somewhere the agent cannot write (a note, a ticket).

    Later, `tpu-agent audit verify --expect-head SEQ:HASH` fails if that row was deleted or rewritten.
    Example: tpu-agent audit anchor
    """
    engine = _engine()
    with engine.store.read() as conn:
        head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    if head is None:
        raise TpuAgentError("the audit log is empty: nothing to anchor yet")
    sys.stdout.write(f"{head['seq']}:{head['hash']}\n")


@audit_app.command("verify")
def audit_verify(
    expect_head: Annotated[
        list[str] | None,
        typer.Option("--expect-head", help="SEQ:HASH from `audit anchor` the log must still hold"),
    ] = None,
    remote: Annotated[
        bool, typer.Option("--remote", help="also compare with the ledger each worker's gate keeps")
    ] = False,
    target: Annotated[
        list[str] | None, typer.Option("--target", "-t", help="with --remote: only these")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Check the hash chain, every start's signed approval, anchors and (--remote) the workers' ledgers.

    Example: tpu-agent audit verify --remote --expect-head 42:9f0c...
    """
    from rich.markup import escape

    from tpu_runtime.remote import audit

    engine = _engine()
    try:
        anchors = [audit.parse_anchor(text) for text in expect_head or []]
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    check = engine.verify_audit(anchors)
    if remote:
        import asyncio

        extra = asyncio.run(engine.verify_remote(target or []))  # TargetError, TpuApiError: exit 2
        if extra:
            check = check.model_copy(update={"ok": False, "problems": [*check.problems, *extra]})
    if as_json:
        _emit_json(check.model_dump(mode="json"))
    elif check.ok:
        out.print(
            f"[green]ok[/]: {check.rows} rows, chain intact, head {check.head_seq}:{check.head_hash[:16]}..."
        )
    else:
        for problem in check.problems:
            err.print(f"[red]tampered[/]: {escape(problem)}", markup=True, soft_wrap=True)
    if not check.ok:
        raise typer.Exit(EXIT_FAILED)


# ---- approver key ----------------------------------------------------------------------------------
def _new_passphrase() -> str:
    from tpu_runtime.cli.approval_prompt import read_passphrase

    first = read_passphrase("New approver passphrase (at least 8 characters; it is never stored): ")
    if read_passphrase("Type it again: ") != first:
        raise BadInput("the two passphrases differ; nothing changed")
    return first


@approver_app.command("init")
def approver_init(
    replace: Annotated[
        bool, typer.Option("--replace", help="replace the existing key (asks its passphrase)")
    ] = False,
) -> None:
    """Make your approver key; run it yourself, in your own terminal, before an agent works here.

    Example: tpu-agent approver init
    """
    from tpu_runtime.cli.approval_prompt import NoTerminal, unlock_key
    from tpu_runtime.remote import approver

    if not _on_terminal():
        raise Denied("making an approver key needs your terminal; nothing changed")
    engine = _engine()
    try:
        existing = approver.load_public(engine.approver_path)
        if existing is not None and not replace:
            raise BadInput(
                f"you already have an approver key ({existing.fingerprint}); --replace makes a new one"
            )
        old = unlock_key(engine) if existing is not None else None  # only the old passphrase replaces it
        key = approver.init_key(engine.approver_path, _new_passphrase(), replace=replace)
    except (approver.ApproverError, NoTerminal) as exc:  # Denied elsewhere; here, as ever, exit 2
        raise BadInput(str(exc)) from None
    try:
        engine.announce_key(key, _approver("tty"), endorsed_by=old)  # the old key signs the new one
    finally:
        approver.forget(old)
    err.print(
        f"approver key {key.fingerprint} saved in {engine.approver_path} (encrypted). Each worker pins it "
        "at its first approved run; a replaced key is refused there until you remove "
        "~/.tpu-agent-gate/approver.pub on that worker",
        markup=False,
    )


@approver_app.command("show")
def approver_show(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Your approver key's fingerprint and the policy in effect.  Example: tpu-agent approver show"""
    from rich.markup import escape

    from tpu_runtime.remote.approver import ApproverError

    engine = _engine()
    try:
        key = engine.approver_key()
        policy = engine.policy()
        key_problem = engine.key_problem()
    except ApproverError as exc:  # an unreadable key file: exit 2 here, as ever
        raise BadInput(str(exc)) from None
    data = {
        "key": key.public_line if key else None,
        "fingerprint": key.fingerprint if key else None,
        "key_problem": key_problem,
        "folder": str(engine.approver_path),
        "policy": policy.policy.model_dump(mode="json"),
        "policy_signed": policy.json_text is not None,
        "policy_note": policy.note,
    }
    if as_json:
        _emit_json(data)
        return
    out.print(f"approver key: {data['fingerprint'] or 'none (run `tpu-agent approver init`)'}", markup=False)
    if key_problem:
        err.print(f"[red]not trusted[/]: {escape(key_problem)}", markup=True, soft_wrap=True)
    out.print(f"policy: {'signed, in effect' if data['policy_signed'] else 'default'}", markup=False)
    if policy.note:
        out.print(f"  {policy.note}", markup=False)
    out.print(
        "  approvals: "
        + ("terminal or MCP dialog" if policy.policy.approvals.elicitation else "terminal only (passphrase)"),
        markup=False,
    )


@approver_app.command("sign-policy")
def approver_sign_policy() -> None:
    """Sign your policy file so it takes effect (read-only rules, dialog approvals); asks the passphrase.

    Example: tpu-agent approver sign-policy
    """
    from tpu_runtime.cli.approval_prompt import NoTerminal, unlock_key
    from tpu_runtime.remote.approver import ApproverError
    from tpu_runtime.remote.policy import PolicyError, read_policy_file, sign_policy

    if not _on_terminal():
        raise Denied("signing the policy needs your terminal; nothing changed")
    engine = _engine()
    try:
        policy = read_policy_file(engine.policy_path)
        err.print(f"policy in {engine.policy_path}:", markup=False)
        err.print(json.dumps(policy.model_dump(mode="json"), indent=2), markup=False)
        answer = typer.prompt("Sign this policy? Type yes", default="no", err=True)
        if answer.strip().lower() != "yes":
            raise Denied("not signed")
        sign_policy(engine.policy_path, unlock_key(engine))
    except (ApproverError, NoTerminal, PolicyError) as exc:  # exit 2 here, as ever
        raise BadInput(str(exc)) from None
    err.print("signed: this policy is in effect until the file changes", markup=False)


def register_remote_commands(app: typer.Typer) -> None:
    """Add `targets`, `run`, `approvals` and `audit` to the main CLI."""
    app.add_typer(targets_app, name="targets")
    app.command("run", no_args_is_help=True)(run)
    app.add_typer(approvals_app, name="approvals")
    app.add_typer(audit_app, name="audit")
    app.add_typer(approver_app, name="approver")
