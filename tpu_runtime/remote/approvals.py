"""Run requests and the person's decisions on them: pending -> approved | denied | expired.

An approval names the request and the digest the person was shown; it can be used once, before it
expires, and only while the stored request still hashes to that digest. Using it (`consume`) is one
transaction: the unused/unexpired/unchanged checks, marking it used, creating the run and writing the
audit row, so two callers racing with the same approval cannot both start a run.
"""

from __future__ import annotations

import secrets
import sqlite3
from typing import Literal

from pydantic import BaseModel

from tpu_runtime.remote import audit
from tpu_runtime.remote.spec import RunSpec, spec_digest, spec_from_json, spec_to_json
from tpu_runtime.remote.store import Store

RequestState = Literal["pending", "approved", "denied", "expired", "running", "finished"]
REQUEST_TTL_S = 3600.0  # a request nobody decided on within an hour can no longer be approved
APPROVAL_TTL_S = 600.0  # an approval must be used within ten minutes

RefusalReason = Literal["unknown", "not_pending", "digest_mismatch", "expired", "used", "changed", "denied"]


class ApprovalError(Exception):
    """A request or approval that cannot be used as asked; `reason` says which rule refused it."""

    def __init__(self, reason: RefusalReason, message: str) -> None:
        super().__init__(message)
        self.reason: RefusalReason = reason


class RunRequest(BaseModel):
    """What the person is asked about: the spec, its digest, and where the decision stands."""

    id: str
    created_at: float
    expires_at: float
    state: RequestState
    digest: str
    spec: RunSpec
    requested_by: str
    decided_by: str | None = None
    decided_at: float | None = None
    note: str | None = None


class Approval(BaseModel):
    """A person's single-use yes to one request at one digest."""

    id: str
    request_id: str
    digest: str
    approver: str
    via: str
    created_at: float
    expires_at: float
    used_at: float | None = None


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(5)}"


def _request(row: sqlite3.Row) -> RunRequest:
    return RunRequest(
        id=row["id"],
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        state=row["state"],
        digest=row["digest"],
        spec=spec_from_json(row["spec"]),
        requested_by=row["requested_by"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        note=row["note"],
    )


def _approval(row: sqlite3.Row) -> Approval:
    return Approval(**{key: row[key] for key in Approval.model_fields})


def summary(spec: RunSpec) -> dict[str, object]:
    """What the audit row records about a request besides its digest (no file contents, no env values)."""
    return {
        "target": spec.target,
        "kind": spec.target_kind,
        "command": list(spec.command),
        "workers": [f"{w.index}:{w.name}@{w.host}:{w.port}" for w in spec.workers],
        "env": sorted(spec.env),
        "uploads": [{"dest": u.dest, "sha256": u.sha256} for u in spec.uploads],
        "downloads": [d.remote for d in spec.downloads],
        "time_limit_s": spec.time_limit_s,
        "loop": None
        if spec.loop is None
        else {
            "name": spec.loop.name,
            "attempts": len(spec.loop.attempts),
            "max_attempts": spec.loop.max_attempts,
        },
        "gke": None if spec.gke is None else {"kind": spec.gke.kind, "name": spec.gke.name},
    }


def create_request(
    store: Store,
    spec: RunSpec,
    requested_by: str,
    now: float,
    ttl_s: float = REQUEST_TTL_S,
    request_id: str = "",
) -> RunRequest:
    rid = request_id or new_id("r")
    digest = spec_digest(spec)
    with store.write() as conn:
        conn.execute(
            "INSERT INTO requests (id, created_at, expires_at, state, digest, spec, requested_by) "
            "VALUES (?,?,?,?,?,?,?)",
            (rid, now, now + ttl_s, "pending", digest, spec_to_json(spec), requested_by),
        )
        audit.append(conn, "request", rid, requested_by, {"digest": digest, **summary(spec)})
    return get_request(store, rid)


def get_request(store: Store, request_id: str) -> RunRequest:
    with store.read() as conn:
        row = conn.execute("SELECT * FROM requests WHERE id = ?", (request_id,)).fetchone()
    if row is None:
        raise ApprovalError("unknown", f"no request {request_id!r}")
    return _request(row)


def list_requests(store: Store, states: tuple[str, ...] = ()) -> list[RunRequest]:
    query = "SELECT * FROM requests"
    args: tuple[str, ...] = ()
    if states:
        query += f" WHERE state IN ({','.join('?' * len(states))})"
        args = states
    with store.read() as conn:
        return [_request(r) for r in conn.execute(query + " ORDER BY created_at", args)]


def get_approval(store: Store, approval_id: str) -> Approval:
    with store.read() as conn:
        row = conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
    if row is None:
        raise ApprovalError("unknown", f"no approval {approval_id!r}")
    return _approval(row)


def usable_approval(store: Store, request_id: str, now: float) -> Approval | None:
    """The unused, unexpired approval of a request (what a front end runs once the person said yes)."""
    with store.read() as conn:
        row = conn.execute(
            "SELECT * FROM approvals WHERE request_id = ? AND used_at IS NULL AND expires_at > ? "
            "ORDER BY created_at DESC LIMIT 1",
            (request_id, now),
        ).fetchone()
    return None if row is None else _approval(row)


def _pending_row(conn: sqlite3.Connection, request_id: str, now: float) -> sqlite3.Row:
    """The request row if it can still be decided on; an expired one is marked so (and audited)."""
    row = conn.execute("SELECT * FROM requests WHERE id = ?", (request_id,)).fetchone()
    if row is None:
        raise ApprovalError("unknown", f"no request {request_id!r}")
    if row["state"] == "pending" and row["expires_at"] <= now:
        conn.execute("UPDATE requests SET state = 'expired' WHERE id = ?", (request_id,))
        audit.append(conn, "expired", request_id, "tpu-agent", {"digest": row["digest"]})
        raise ApprovalError("expired", f"request {request_id} expired before anyone decided on it")
    if row["state"] != "pending":
        raise ApprovalError("not_pending", f"request {request_id} is {row['state']}, not pending")
    return row


def approve(
    store: Store,
    request_id: str,
    approver: str,
    digest: str,
    via: str,
    now: float,
    ttl_s: float = APPROVAL_TTL_S,
) -> Approval:
    """Record the person's yes; refused unless `digest` is the one the stored request hashes to now.

    A refusal is itself audited and committed before it is raised.
    """
    approval_id = new_id("a")
    refusal: ApprovalError | None = None
    with store.write() as conn:
        try:
            row = _pending_row(conn, request_id, now)
            current = spec_digest(spec_from_json(row["spec"]))
            if digest != row["digest"] or digest != current:
                raise ApprovalError(
                    "digest_mismatch",
                    f"request {request_id} has digest {current[:19]}..., not the {digest[:19]}... offered "
                    "for approval: show it again and approve what it is now",
                )
        except ApprovalError as exc:
            refusal = exc
            audit.append(conn, "refused", request_id, approver, {"why": exc.reason, "offered": digest})
        if refusal is None:
            conn.execute(
                "INSERT INTO approvals (id, request_id, digest, approver, via, created_at, expires_at) "
                "VALUES (?,?,?,?,?,?,?)",
                (approval_id, request_id, digest, approver, via, now, now + ttl_s),
            )
            conn.execute(
                "UPDATE requests SET state = 'approved', decided_by = ?, decided_at = ? WHERE id = ?",
                (approver, now, request_id),
            )
            audit.append(
                conn,
                "approved",
                request_id,
                approver,
                {"approval": approval_id, "digest": digest, "via": via, "expires_at": now + ttl_s},
            )
    if refusal is not None:
        raise refusal
    return get_approval(store, approval_id)


def deny(store: Store, request_id: str, approver: str, reason: str, now: float) -> RunRequest:
    refusal: ApprovalError | None = None
    with store.write() as conn:
        try:
            row = _pending_row(conn, request_id, now)
        except ApprovalError as exc:
            refusal = exc
        else:
            conn.execute(
                "UPDATE requests SET state = 'denied', decided_by = ?, decided_at = ?, note = ? WHERE id = ?",
                (approver, now, reason, request_id),
            )
            audit.append(conn, "denied", request_id, approver, {"digest": row["digest"], "reason": reason})
    if refusal is not None:
        raise refusal
    return get_request(store, request_id)


def consume(store: Store, approval: Approval, actor: str, now: float) -> tuple[RunRequest, str]:
    """Use an approval once: returns the request as stored (what will run) and the new run's id.

    Refused when the approval is unknown, used, expired, or the request changed after approval.
    """
    run_id = new_id("run")
    refusal: ApprovalError | None = None
    with store.write() as conn:
        row = conn.execute("SELECT * FROM approvals WHERE id = ?", (approval.id,)).fetchone()
        try:
            if row is None:
                raise ApprovalError("unknown", f"no approval {approval.id!r}: only the person can approve")
            if row["request_id"] != approval.request_id or row["digest"] != approval.digest:
                raise ApprovalError("changed", f"approval {approval.id} does not match the stored approval")
            if row["used_at"] is not None:
                raise ApprovalError("used", f"approval {approval.id} was already used: replay refused")
            if row["expires_at"] <= now:
                raise ApprovalError("expired", f"approval {approval.id} expired: ask the person again")
            req = conn.execute("SELECT * FROM requests WHERE id = ?", (row["request_id"],)).fetchone()
            current = spec_digest(spec_from_json(req["spec"]))
            if current != row["digest"] or req["digest"] != row["digest"]:
                raise ApprovalError(
                    "changed",
                    f"request {req['id']} changed after it was approved (digest {current[:19]}... is not "
                    f"the approved {row['digest'][:19]}...): refused",
                )
            if req["state"] != "approved":
                raise ApprovalError("not_pending", f"request {req['id']} is {req['state']}, not approved")
        except ApprovalError as exc:
            refusal = exc
            audit.append(
                conn, "refused", approval.request_id, actor, {"approval": approval.id, "why": exc.reason}
            )
        if refusal is None:
            assert row is not None
            conn.execute(
                "UPDATE approvals SET used_at = ?, run_id = ? WHERE id = ?", (now, run_id, approval.id)
            )
            conn.execute("UPDATE requests SET state = 'running' WHERE id = ?", (approval.request_id,))
            conn.execute(
                "INSERT INTO runs (id, request_id, approval_id, state, started_at) VALUES (?,?,?,?,?)",
                (run_id, approval.request_id, approval.id, "running", now),
            )
            audit.append(
                conn,
                "start",
                run_id,
                actor,
                {"request": approval.request_id, "approval": approval.id, "digest": row["digest"]},
            )
    if refusal is not None:
        raise refusal
    return get_request(store, approval.request_id), run_id
