"""Approval in a dialog, for a front end that asks the person itself: whether to ask about a request,
how the person's answer becomes an approval or a denial, and whether a request may start. Outcomes are
reason codes with their facts; the front end words them for its own users and shapes the answer. No
approval passes through it as an argument (`RemoteEngine.approve_elicited` is usable only by the engine
that recorded it).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from tpu_runtime.remote.shown import printable, printable_lines, shell_line
from tpu_runtime.remote.spec import display_env

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import Approval, RunRequest
    from tpu_runtime.remote.engine import RemoteEngine

logger = logging.getLogger(__name__)

DIGEST_PREFIX_CHARS = 8

Answer = Literal["accept", "decline", "cancel"]
Unasked = Literal["no_request", "not_pending", "no_elicitation", "terminal_only", "error"]
"""Why no question was asked: no such request, not pending, the client has no dialog, the person's
policy wants terminal approval, or the request could not be filed."""
RefusedStatus = Literal["awaiting_approval", "not_approved", "denied", "expired"]
RefusalReason = Literal[
    "unknown_request",  # no such request id (detail: the store's error)
    "no_dialog",  # the front end cannot show a dialog: the person approves in their terminal
    "terminal_only",  # the person's policy wants approval in their terminal
    "declined",  # the person declined in the dialog (the request is now denied)
    "cancelled",  # the person cancelled the dialog (the request is now denied)
    "approval_failed",  # the engine refused the dialog's approval (detail: its error)
    "wrong_digest",  # what the person typed is not the digest's start (detail: what they typed)
    "already_run",  # the request's approval was used by run `run_id`
    "denied",  # the request was denied before
    "expired",  # the request expired before it was decided
    "lapsed",  # the request is still pending in the store but past its expiry
    "no_usable_approval",  # approved once, but the approval expired or was used
]


@dataclass(frozen=True)
class Refusal:
    """Why a request does not start now, as a reason code and the facts a front end words it with."""

    reason: RefusalReason
    status: RefusedStatus | None = None  # None: an error (unknown id, used approval)
    request: RunRequest | None = None
    detail: str = ""
    run_id: str | None = None


def utc_text(ts: float) -> str:
    """A timestamp as the approval dialog and request views show it (UTC, to the second)."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def digest_confirmed(typed: str, digest: str) -> bool:
    """Whether what the person typed is the digest's first characters (or all of it)."""
    text = typed.strip().lower().removeprefix("sha256:")
    full = digest.lower().removeprefix("sha256:")
    return len(text) >= DIGEST_PREFIX_CHARS and full.startswith(text)


def _counted(title: str, rows: list[str]) -> list[str]:
    """A dialog section that says how many rows follow, so a long list cannot pass for a short one."""
    return [f"{title} ({len(rows)}):", *rows]


def approval_message(request: RunRequest) -> str:
    """The approval dialog's text: everything that will run where. Depends only on the stored request,
    so it renders identically on every round of a 2026-07-28 input-required exchange. Every field the
    requester chose goes through `shown`, so no character in it can hide or rewrite what the dialog says."""
    from tpu_runtime.remote.targets import host_key_fingerprint

    spec = request.spec
    lines = [
        f"Approve this run on target {printable(spec.target)!r} ({spec.target_kind})?",
        f"Command: {shell_line(spec.command)}",
    ]
    if spec.workers:
        lines += _counted(
            "Workers",
            [
                f"  {w.index} {printable(w.name)}: {printable(w.user)}@{printable(w.host)}:{w.port}, "
                f"host key {host_key_fingerprint(w.host_keys[0]) if w.host_keys else 'none'}"
                for w in spec.workers
            ],
        )
    env = ", ".join(f"{k}={v}" for k, v in display_env(spec).items())
    lines.append(f"Environment: {env or 'none added'}")
    if spec.uploads:
        lines += _counted(
            "Uploads",
            [
                f"  {printable(u.source)} -> files/{printable(u.dest)} "
                f"({u.size} bytes, sha256 {u.sha256[:16]}...)"
                for u in spec.uploads
            ],
        )
    else:
        lines.append("Uploads: none")
    if spec.downloads:
        lines.append("Downloads: " + ", ".join(printable(d.remote) for d in spec.downloads))
    lines.append(f"Time limit: {spec.time_limit_s:g} s")
    if spec.remote_dir:
        lines.append(f"Run folder on each worker: {printable(spec.remote_dir)}/runs/{request.id}")
    if spec.gke is not None:
        lines += [
            f"kubectl context {printable(spec.gke.context)}, namespace {printable(spec.gke.namespace)}; "
            "manifest to apply:",
            printable_lines(spec.gke.manifest),
        ]
    if spec.ray is not None:
        job = spec.ray
        lines += [
            f"Ray job {printable(job.submission_id)} at {printable(job.address)}:",
            f"  entrypoint: {printable(job.entrypoint)}",
            f"  runtime_env: {printable(json.dumps(job.runtime_env, sort_keys=True))}",
            "  working_dir: the uploads listed above, by hash",
            f"  entrypoint_resources: {printable(json.dumps(job.entrypoint_resources, sort_keys=True))}",
            f"  TPU hosts: {job.hosts}",
        ]
    lines += [
        f"Request {request.id}, filed by {printable(request.requested_by)}; "
        f"can be approved until {utc_text(request.expires_at)}.",
        f"Digest: {request.digest}",
        f"To approve exactly this, accept and type the first {DIGEST_PREFIX_CHARS} characters of the digest "
        "after 'sha256:'. Decline to refuse; nothing runs.",
    ]
    return "\n".join(lines)


def to_ask(engine: RemoteEngine, request_id: str, *, can_ask: bool) -> RunRequest | Unasked:
    """The request to ask the person about, or why nothing is asked (`can_ask`: the client has a dialog)."""
    from tpu_runtime.remote.approvals import ApprovalError

    try:
        request = engine.get_request(request_id)
    except ApprovalError:
        return "no_request"
    if request.effective_state() != "pending":
        return "not_pending"
    if not can_ask:
        return "no_elicitation"
    if not engine.policy().policy.approvals.elicitation:
        return "terminal_only"
    return request


def decide(
    engine: RemoteEngine,
    request: RunRequest,
    answer: Answer | None,
    typed: str = "",
    approver: str = "",
    dialog: str = "the approval dialog",
) -> Refusal | None:
    """Record the person's answer from the dialog (None: no answer came); a Refusal when the run must
    not start. Only an accept with the digest's first characters approves; a wrong digest is refused
    and audited by the engine. `dialog` names the dialog in the audit log's denial reason."""
    from tpu_runtime.remote.approvals import ELICITATION_VIA, ApprovalError
    from tpu_runtime.remote.engine import whoami

    approver = approver or whoami(ELICITATION_VIA)
    if answer in ("decline", "cancel"):
        word: RefusalReason = "declined" if answer == "decline" else "cancelled"
        try:
            engine.deny(request.id, approver, f"{word} in {dialog}")
        except ApprovalError as exc:
            logger.info("could not record the denial of %s: %s", request.id, exc)
        return Refusal(word, "denied", request)
    if answer != "accept":
        return None
    if digest_confirmed(typed, request.digest):
        try:
            engine.approve_elicited(request.id, approver, request.digest)
        except ApprovalError as exc:
            if engine.approval_for(request.id) is None:  # approved elsewhere meanwhile: use that
                return Refusal("approval_failed", "not_approved", request, str(exc))
        return None
    with contextlib.suppress(ApprovalError):  # refused and audited by the engine
        engine.approve_elicited(request.id, approver, typed.strip()[:80])
    return Refusal("wrong_digest", "not_approved", request, typed.strip()[:20])


def approval_to_start(
    engine: RemoteEngine,
    request_id: str,
    *,
    unasked: Unasked | None,
    answer: Answer | None = None,
    typed: str = "",
    dialog: str = "the approval dialog",
) -> tuple[RunRequest, Approval] | Refusal:
    """The request and its usable approval, after acting on the dialog's answer; else why not.

    `unasked` says why no question was asked (None: one was, and `answer`/`typed` hold the reply).
    """
    from tpu_runtime.remote.approvals import ApprovalError
    from tpu_runtime.remote.runs import run_for_request

    try:
        request = engine.get_request(request_id)
    except ApprovalError as exc:
        return Refusal("unknown_request", detail=str(exc))
    if request.state == "pending":
        if unasked in ("no_elicitation", "terminal_only"):
            if engine.approval_for(request.id) is None:
                return Refusal(
                    "no_dialog" if unasked == "no_elicitation" else "terminal_only",
                    "awaiting_approval",
                    request,
                )
        elif unasked is None:
            refused = decide(engine, request, answer, typed, dialog=dialog)
            if refused is not None:
                return refused
    approval = engine.approval_for(request.id)
    if approval is not None:
        return request, approval
    request = engine.get_request(request.id)
    if request.state in ("running", "finished"):
        return Refusal("already_run", request=request, run_id=run_for_request(engine.store, request.id))
    if request.state == "denied":
        return Refusal("denied", "denied", request)
    if request.state == "expired":
        return Refusal("expired", "expired", request)
    if request.effective_state() == "expired":  # still pending in the store, past its expiry
        return Refusal("lapsed", "expired", request)
    return Refusal("no_usable_approval", request=request)


FetchKey = tuple[str, tuple[str, ...], str, int]


class LogReads:
    """The read-only `tail` requests a front end filed to fetch log files, by their arguments: one still
    undecided is reused, so a question asked on one round of a dialog exchange is the one answered on
    the next."""

    def __init__(self) -> None:
        self._filed: dict[FetchKey, str] = {}

    def known(self, target: str, paths: list[str], workers: str, lines: int) -> str | None:
        """The request filed for these arguments, if any."""
        return self._filed.get((target, tuple(paths), workers, lines))

    def request_for(
        self, engine: RemoteEngine, target: str, paths: list[str], workers: str, lines: int, requested_by: str
    ) -> str:
        """The request id for these arguments: a pending or approved one already filed, else a new one
        (`RemoteEngine.request_run`'s errors pass through)."""
        from tpu_runtime.remote.approvals import ApprovalError

        key = (target, tuple(paths), workers, lines)
        known = self._filed.get(key)
        if known is not None:
            with contextlib.suppress(ApprovalError):
                if engine.get_request(known).state in ("pending", "approved"):
                    return known
        request = engine.request_run(
            target,
            ["tail", "-n", str(lines), *paths],
            workers=workers,
            time_limit_s=120.0,
            requested_by=requested_by,
        )
        self._filed[key] = request.id
        return request.id


Standing = Literal["approved", "awaiting_approval", "denied", "expired"]


def standing(request: RunRequest) -> Standing:
    """Where the person's decision on a request that has not started a run stands."""
    if request.state == "approved":
        return "approved"
    if request.effective_state() == "pending":
        return "awaiting_approval"
    return "denied" if request.state == "denied" else "expired"
