"""Run requests and the person's decisions on them: pending -> approved | denied | expired.

An approval names the request and the digest the person was shown; it can be used once, before it
expires, and only while the stored request still hashes to that digest. Using it (`consume`) is one
transaction: the unused/unexpired/unchanged checks, the proof check, marking it used, creating the run
and writing the audit row, so two callers racing with the same approval cannot both start a run.

A row in the state file proves nothing by itself (whoever can write the file could insert one), so each
approval must carry a proof that `consume` checks against `Trust`:
- the person's: a signature by their approver key over the approval's statement (request, digest,
  approver, expiry, approval id), made after they typed the passphrase (`approver`);
- a policy rule's: the rule must still allow the stored spec under the person's signed policy;
- an MCP dialog answer's: only when the signed policy allows dialogs, and only in the process that
  received the answer (it keeps the approval ids in memory; the state file cannot add to them).
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from tpu_runtime.errors import BadInput
from tpu_runtime.remote import approver as keys
from tpu_runtime.remote import audit
from tpu_runtime.remote.policy import LoadedPolicy, Policy, auto_approval_rule
from tpu_runtime.remote.rows import row_model
from tpu_runtime.remote.spec import (
    RunSpec,
    canonical_json,
    check_size,
    spec_digest,
    spec_from_json,
    spec_to_json,
)
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.worker_gate import script_problem

RequestState = Literal["pending", "approved", "denied", "expired", "running", "finished"]
REQUEST_TTL_S = 3600.0  # a request nobody decided on within an hour can no longer be approved
APPROVAL_TTL_S = 600.0  # an approval must be used within ten minutes

RefusalReason = Literal[
    "unknown", "not_pending", "digest_mismatch", "expired", "used", "changed", "denied", "unsigned", "no_key"
]
POLICY_VIA = "policy"
ELICITATION_VIA = "mcp-elicitation"


class ApprovalError(BadInput):
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

    def effective_state(self, now: float | None = None) -> str:
        """The state as it stands at `now`: a pending request past its expiry is expired, though its
        row still says pending until someone tries to decide it."""
        if self.state == "pending" and self.expires_at <= (time.time() if now is None else now):
            return "expired"
        return self.state


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
    statement: str | None = Field(default=None, description="what the person's key signed (canonical JSON)")
    signature: str | None = Field(default=None, description="OpenSSH signature over the statement")


class Trust(BaseModel):
    """What an approval is checked against: the pinned approver key, and the dialog answers this
    process itself received."""

    key: keys.ApproverKey | None = None
    elicited: frozenset[str] = frozenset()

    def key_lines(self) -> list[str]:
        return [self.key.public_line] if self.key is not None else []


def statement_text(
    approval_id: str,
    request_id: str,
    digest: str,
    approver: str,
    created_at: float,
    expires_at: float,
    key: str,
) -> str:
    """The bytes the person's key signs: everything the approval is, in canonical JSON."""
    return canonical_json(
        {
            "v": 1,
            "id": approval_id,
            "request": request_id,
            "digest": digest,
            "approver": approver,
            "created_at": created_at,
            "expires_at": expires_at,
            "key": key,
        }
    )


def _signed_by(text: str, signature: str, namespace: str, key_lines: list[str]) -> bool:
    return any(keys.verify(line, text.encode(), signature, namespace) for line in key_lines)


def _signed_policy(row: Mapping[str, Any], key_lines: list[str]) -> Policy | str:
    statement, signature = row.get("statement"), row.get("signature")
    if not isinstance(statement, str) or not isinstance(signature, str):
        return "it carries no signed policy"
    if not _signed_by(statement, signature, keys.POLICY_NAMESPACE, key_lines):
        return "the policy it carries is not signed by your approver key"
    try:
        return Policy.model_validate_json(statement)
    except ValueError:
        return "the policy it carries cannot be read"


def proof_problem(
    row: Mapping[str, Any], spec: RunSpec, key_lines: list[str], elicited: frozenset[str] | None
) -> str | None:
    """Why this approval (a row of the approvals table) is not the person's, or None when it is.

    `key_lines`: the approver public keys accepted; `elicited`: the dialog approvals this process
    received (None: not checked, as when the audit log is verified afterwards).
    """
    doctored = script_problem(spec.model_dump(mode="json"), str(row["request_id"]))
    if doctored is not None:
        return doctored
    via = row["via"]
    if via in (POLICY_VIA, ELICITATION_VIA):
        policy = _signed_policy(row, key_lines)
        if isinstance(policy, str):
            return policy
        if via == POLICY_VIA:
            if auto_approval_rule(spec, policy) != row["approver"]:
                return f"the signed policy does not allow this request as {row['approver']!r}"
            return None
        if not policy.approvals.elicitation:
            return "it came from an MCP dialog, and your signed policy requires terminal approval"
        if elicited is not None and row["id"] not in elicited:
            return "it claims an MCP dialog answer that this process never received"
        return None
    if not key_lines:
        return "no approver key is set up (run `tpu-agent approver init` in your own terminal)"
    statement, signature = row.get("statement"), row.get("signature")
    if not isinstance(statement, str) or not isinstance(signature, str):
        return "it carries no signature from your approver key"
    try:
        said = json.loads(statement)
    except ValueError:
        return "its signed statement cannot be read"
    for field, column in (
        ("id", "id"),
        ("request", "request_id"),
        ("digest", "digest"),
        ("approver", "approver"),
    ):
        if said.get(field) != row[column]:
            return f"its signed statement names another {field}"
    if said.get("expires_at") != row["expires_at"]:
        return "its expiry differs from the one the person signed"
    if not _signed_by(statement, signature, keys.APPROVAL_NAMESPACE, key_lines):
        return "its signature does not verify with your approver key"
    return None


def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(5)}"


def _request(row: sqlite3.Row) -> RunRequest:
    return row_model(RunRequest, row, spec=spec_from_json(row["spec"]))


def _approval(row: sqlite3.Row) -> Approval:
    return row_model(Approval, row)


def summary(spec: RunSpec) -> dict[str, object]:
    """What the audit row records about a request besides its digest (no file contents, no env values)."""
    return {
        "target": spec.target,
        "kind": spec.target_kind,
        "command": list(spec.command),
        "workers": [f"{w.index}:{w.name}@{w.host}:{w.port}" for w in spec.workers],
        "env": sorted(spec.env),
        "secret_env": sorted(spec.secret_env),
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
        "ray": None
        if spec.ray is None
        else {"address": spec.ray.address, "job": spec.ray.submission_id, "hosts": spec.ray.hosts},
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
    check_size(spec)
    digest = spec_digest(spec)
    with store.write() as conn:
        conn.execute(
            "INSERT INTO requests (id, created_at, expires_at, state, digest, spec, requested_by) "
            "VALUES (?,?,?,?,?,?,?)",
            (rid, now, now + ttl_s, "pending", digest, spec_to_json(spec), requested_by),
        )
        audit.append(conn, "request", rid, requested_by, {"digest": digest, **summary(spec)})
    return get_request(store, rid)


def _known_row(conn: sqlite3.Connection, table: Literal["requests", "approvals"], row_id: str) -> sqlite3.Row:
    """The row of `table` with this id; an id it does not hold is refused as unknown ("no request 'x'")."""
    row = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if row is None:
        raise ApprovalError("unknown", f"no {table.removesuffix('s')} {row_id!r}")
    return row


def get_request(store: Store, request_id: str) -> RunRequest:
    with store.read() as conn:
        return _request(_known_row(conn, "requests", request_id))


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
        return _approval(_known_row(conn, "approvals", approval_id))


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
    row = _known_row(conn, "requests", request_id)
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
    signer: keys.UnlockedApprover | None = None,
    proof: LoadedPolicy | None = None,
) -> Approval:
    """Record a yes; refused unless `digest` is the one the stored request hashes to now.

    The person's yes (any `via` but a policy rule or an MCP dialog) needs `signer`, their unlocked
    approver key: the statement is signed inside the same transaction. A policy rule's or a dialog's yes
    carries the signed policy that allowed it (`proof`). A refusal is itself audited and committed
    before it is raised.
    """
    approval_id = new_id("a")
    if via not in (POLICY_VIA, ELICITATION_VIA) and signer is None:
        raise ApprovalError("unsigned", "the person's approval needs their approver key (passphrase)")
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
            doctored = script_problem(json.loads(row["spec"]), request_id)
            if doctored is not None:
                raise ApprovalError("changed", f"request {request_id} cannot be approved: {doctored}")
        except ApprovalError as exc:
            refusal = exc
            audit.append(conn, "refused", request_id, approver, {"why": exc.reason, "offered": digest})
        if refusal is None:
            statement = signature = None
            if proof is not None and signer is None:
                statement, signature = proof.json_text, proof.signature
            if signer is not None:
                statement = statement_text(
                    approval_id, request_id, digest, approver, now, now + ttl_s, signer.key.fingerprint
                )
                signature = signer.sign(statement.encode(), keys.APPROVAL_NAMESPACE)
            conn.execute(
                "INSERT INTO approvals (id, request_id, digest, approver, via, created_at, expires_at, "
                "statement, signature) VALUES (?,?,?,?,?,?,?,?,?)",
                (approval_id, request_id, digest, approver, via, now, now + ttl_s, statement, signature),
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
                {
                    "approval": approval_id,
                    "digest": digest,
                    "via": via,
                    "expires_at": now + ttl_s,
                    "key": signer.key.fingerprint if signer is not None else None,
                },
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


def consume(
    store: Store, approval: Approval, actor: str, now: float, trust: Trust
) -> tuple[RunRequest, str, Approval]:
    """Use an approval once: returns the request as stored (what will run), the new run's id, and the
    approval as stored (with its proof, for the workers' gates).

    Refused when the approval is unknown, used, expired, not proven to be the person's (`Trust`), or
    the request changed after approval.
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
            problem = proof_problem(dict(row), spec_from_json(req["spec"]), trust.key_lines(), trust.elicited)
            started = conn.execute(
                "SELECT 1 FROM runs WHERE approval_id = ? UNION ALL SELECT 1 FROM audit WHERE kind = 'start' "
                "AND payload LIKE ?",
                (approval.id, f'%"approval":"{approval.id}"%'),
            ).fetchone()
            if started is not None:
                raise ApprovalError("used", f"approval {approval.id} already started a run: replay refused")
            if problem is not None:
                raise ApprovalError(
                    "unsigned", f"approval {approval.id} is not the person's: {problem}; refused"
                )
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
    return get_request(store, approval.request_id), run_id, get_approval(store, approval.id)


def key_chain(conn: sqlite3.Connection) -> list[str]:
    """The approver keys this log trusts: the first it announced (`approver_key` rows), then each one
    an already trusted key endorsed when the person replaced it. An announcement without a valid
    endorsement (a key file replaced by hand, a row written by someone else) adds nothing."""
    trusted: list[str] = []
    for row in conn.execute("SELECT payload FROM audit WHERE kind = 'approver_key' ORDER BY seq"):
        said = json.loads(row["payload"])
        line, old, endorsement = said.get("key"), said.get("endorsed_by"), said.get("endorsement")
        if not isinstance(line, str) or line in trusted:
            continue
        if not trusted or (
            isinstance(old, str)
            and old in trusted
            and isinstance(endorsement, str)
            and keys.verify(old, keys.endorsement_text(old, line).encode(), endorsement, keys.KEY_NAMESPACE)
        ):
            trusted.append(line)
    return trusted


def key_problem(conn: sqlite3.Connection, current: keys.ApproverKey | None) -> str | None:
    """Why the key file's key is not one this log trusts, or None (also when the log names no key yet:
    the key file's is then the first, and is announced at its first approval)."""
    chain = key_chain(conn)
    if current is None or not chain or current.public_line in chain:
        return None
    return (
        f"the approver key file holds key {current.fingerprint}, which no earlier key of yours endorsed "
        "(it was replaced without `tpu-agent approver init --replace`, which asks the old passphrase); "
        "nothing signed with it counts. If you made it yourself because the old passphrase is lost, move "
        "state.db aside to begin a new audit log, and remove the pin on each worker"
    )


def known_keys(conn: sqlite3.Connection, current: keys.ApproverKey | None) -> list[str]:
    """The approver keys whose signatures count: the log's trusted chain, or the key file's key while
    the log names none."""
    chain = key_chain(conn)
    if chain:
        return chain
    return [current.public_line] if current is not None else []


def start_problems(conn: sqlite3.Connection, key_lines: list[str]) -> list[str]:
    """Every `start` in the log must name an approval for the same request and digest, used once, by
    that run, whose proof holds (the person's signature, or a signed policy that allowed it)."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for row in conn.execute("SELECT seq, subject, payload FROM audit WHERE kind = 'start' ORDER BY seq"):
        payload = json.loads(row["payload"])
        approval_id = payload.get("approval")
        where = f"row {row['seq']} (start of {row['subject']})"
        if approval_id in seen:
            problems.append(
                f"{where}: approval {approval_id} already started a run at row {seen[approval_id]}"
            )
            continue
        seen[str(approval_id)] = row["seq"]
        found = conn.execute("SELECT * FROM approvals WHERE id = ?", (approval_id,)).fetchone()
        if found is None:
            problems.append(f"{where}: its approval {approval_id} is not in the state file")
            continue
        req = conn.execute("SELECT * FROM requests WHERE id = ?", (found["request_id"],)).fetchone()
        if req is None or found["request_id"] != payload.get("request"):
            problems.append(f"{where}: its approval is for another request")
            continue
        spec = spec_from_json(req["spec"])
        if found["digest"] != payload.get("digest") or spec_digest(spec) != found["digest"]:
            problems.append(f"{where}: the approved digest is not the digest of the request that ran")
        if found["used_at"] is None or found["run_id"] != row["subject"]:
            problems.append(f"{where}: approval {approval_id} is not recorded as used by this run")
        problem = proof_problem(dict(found), spec, key_lines, None)
        if problem is not None:
            problems.append(f"{where}: approval {approval_id} is not the person's: {problem}")
    return problems
