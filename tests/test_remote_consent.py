"""The dialog approval flow in tpu_runtime.remote.consent, against an engine that records what it was
told (the MCP runs server's tests drive the same flow through a real client and sshd)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

from tpu_runtime.remote.approvals import Approval, ApprovalError, RunRequest
from tpu_runtime.remote.consent import (
    LogReads,
    Refusal,
    approval_to_start,
    decide,
    digest_confirmed,
    standing,
    to_ask,
)

if TYPE_CHECKING:
    from tpu_runtime.remote.engine import RemoteEngine

DIGEST = "sha256:0123456789abcdef"


class _Engine:
    """Keeps one request; approve_elicited approves only the right digest, as the real engine does."""

    def __init__(self, state: str = "pending", dialogs: bool = True, expires_at: float | None = None) -> None:
        self.request = RunRequest.model_construct(
            id="r-abc123",
            state=state,
            digest=DIGEST,
            expires_at=time.time() + 600 if expires_at is None else expires_at,
        )
        self.dialogs = dialogs
        self.approval: Approval | None = None
        self.calls: list[tuple[str, str]] = []

    def get_request(self, request_id: str) -> RunRequest:
        if request_id != self.request.id:
            raise ApprovalError("unknown", f"no request {request_id!r}")
        return self.request

    def policy(self) -> SimpleNamespace:
        return SimpleNamespace(policy=SimpleNamespace(approvals=SimpleNamespace(elicitation=self.dialogs)))

    def deny(self, request_id: str, approver: str, reason: str = "") -> RunRequest:
        self.calls.append(("deny", reason))
        self.request = self.request.model_copy(update={"state": "denied"})
        return self.request

    def approve_elicited(self, request_id: str, approver: str, digest: str) -> Approval:
        self.calls.append(("approve", digest))
        if digest != self.request.digest:
            raise ApprovalError("digest_mismatch", "the digest does not match")
        self.approval = Approval.model_construct(id="a-1", request_id=request_id, digest=digest)
        self.request = self.request.model_copy(update={"state": "approved"})
        return self.approval

    def approval_for(self, request_id: str) -> Approval | None:
        return self.approval


def _e(engine: _Engine) -> RemoteEngine:
    return cast("RemoteEngine", engine)


def test_digest_confirmed_needs_the_digests_first_eight_characters() -> None:
    assert digest_confirmed("01234567", DIGEST) and digest_confirmed(" SHA256:0123456789AB ", DIGEST)
    assert not digest_confirmed("0123456", DIGEST) and not digest_confirmed("12345678", DIGEST)


def test_to_ask_says_why_no_question_is_asked() -> None:
    engine = _Engine()
    assert to_ask(_e(engine), "r-abc123", can_ask=True) is engine.request
    assert to_ask(_e(engine), "r-000000", can_ask=True) == "no_request"
    assert to_ask(_e(engine), "r-abc123", can_ask=False) == "no_elicitation"
    assert to_ask(_e(_Engine(dialogs=False)), "r-abc123", can_ask=True) == "terminal_only"
    assert to_ask(_e(_Engine(expires_at=1.0)), "r-abc123", can_ask=True) == "not_pending"


def test_only_an_accept_with_the_digest_approves() -> None:
    engine = _Engine()
    wrong = decide(_e(engine), engine.request, "accept", "deadbeef", approver="me")
    assert isinstance(wrong, Refusal) and wrong.status == "not_approved" and wrong.detail == "deadbeef"
    assert engine.calls == [("approve", "deadbeef")] and engine.approval is None  # refused, and audited
    assert decide(_e(engine), engine.request, None, approver="me") is None and engine.approval is None
    ready = approval_to_start(_e(engine), "r-abc123", unasked=None, answer="accept", typed="0123456789")
    assert (
        isinstance(ready, tuple) and ready[1] is engine.approval and engine.calls[-1] == ("approve", DIGEST)
    )


def test_decline_denies_and_nothing_starts() -> None:
    engine = _Engine()
    refused = approval_to_start(_e(engine), "r-abc123", unasked=None, answer="decline")
    assert isinstance(refused, Refusal) and refused.status == "denied" and refused.reason == "declined"
    assert engine.calls[0][0] == "deny" and engine.approval is None


def test_without_a_dialog_the_person_approves_in_their_terminal() -> None:
    engine = _Engine()
    refused = approval_to_start(_e(engine), "r-abc123", unasked="no_elicitation")
    assert isinstance(refused, Refusal) and refused.status == "awaiting_approval"
    assert refused.reason == "no_dialog" and refused.request is engine.request and engine.calls == []
    unknown = approval_to_start(_e(engine), "r-000000", unasked="no_request")
    assert isinstance(unknown, Refusal) and unknown.status is None and unknown.reason == "unknown_request"
    expired = approval_to_start(_e(_Engine(expires_at=1.0)), "r-abc123", unasked="not_pending")
    assert isinstance(expired, Refusal) and expired.status == "expired"


class _Filer:
    """Files tail requests with ids r-000001, r-000002, ...; a request's state can be set."""

    def __init__(self) -> None:
        self.filed: list[list[str]] = []
        self.states: dict[str, str] = {}

    def request_run(self, target: str, argv: list[str], **how: object) -> RunRequest:
        self.filed.append(argv)
        request_id = f"r-{len(self.filed):06d}"
        self.states[request_id] = "pending"
        return RunRequest.model_construct(id=request_id, state="pending")

    def get_request(self, request_id: str) -> RunRequest:
        return RunRequest.model_construct(id=request_id, state=self.states[request_id])


def test_log_reads_reuse_an_undecided_request_and_file_anew_after_it_was_used() -> None:
    filer, reads = _Filer(), LogReads()
    engine = cast("RemoteEngine", filer)
    assert reads.known("tpu", ["/var/log/a"], "all", 5) is None
    first = reads.request_for(engine, "tpu", ["/var/log/a"], "all", 5, "mcp:fetch_logs")
    assert (
        filer.filed == [["tail", "-n", "5", "/var/log/a"]]
        and reads.known("tpu", ["/var/log/a"], "all", 5) == first
    )
    assert reads.request_for(engine, "tpu", ["/var/log/a"], "all", 5, "mcp:fetch_logs") == first
    other = reads.request_for(engine, "tpu", ["/var/log/a"], "0", 5, "mcp:fetch_logs")
    assert other != first and len(filer.filed) == 2
    filer.states[first] = "finished"
    again = reads.request_for(engine, "tpu", ["/var/log/a"], "all", 5, "mcp:fetch_logs")
    assert again not in (first, other) and reads.known("tpu", ["/var/log/a"], "all", 5) == again


def test_standing_says_where_the_decision_stands() -> None:
    def request(state: str, expires_at: float = 1e12) -> RunRequest:
        return RunRequest.model_construct(id="r-abc123", state=state, expires_at=expires_at)

    assert standing(request("approved")) == "approved"
    assert standing(request("pending")) == "awaiting_approval"
    assert standing(request("pending", expires_at=1.0)) == "expired"
    assert standing(request("denied")) == "denied"
