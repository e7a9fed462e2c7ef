"""The append-only, hash-chained audit log: every request, decision, start, output digest and result.

Each row's hash covers its own fields and the previous row's hash, and a one-row head table holds the
last sequence number and hash, written in the same transaction. So an edited row breaks its own hash, a
deleted row leaves a gap in the sequence or a broken link, and a deleted last row no longer matches the
head. SQLite triggers refuse UPDATE and DELETE on the table; `verify` also reports when they are gone,
and opening the state file records a `tamper` row before it re-creates them.

Whoever can write the file can still drop rows at the end and move the head back, or recompute the whole
chain: nothing inside one file can prove it was not rewritten. So the head is anchored outside it:
`tpu-agent audit anchor` prints it for the person to keep (`verify --expect-head SEQ:HASH` checks the log
still holds it), and every worker's gate keeps an append-only ledger of the runs it started with the
head at that moment (`verify --remote` compares them; see `engine.RemoteEngine.verify_audit`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from tpu_runtime.remote.rows import row_model
from tpu_runtime.remote.spec import canonical_json

GENESIS = "0" * 64


class AuditRow(BaseModel):
    seq: int
    ts: str
    kind: str
    subject: str
    actor: str
    payload: dict[str, Any]
    prev: str
    hash: str


class AuditCheck(BaseModel):
    """The verdict of `verify`: ok, how many rows were checked, and each problem found."""

    ok: bool
    rows: int
    head_seq: int
    head_hash: str
    problems: list[str]


def _row_hash(prev: str, seq: int, ts: str, kind: str, subject: str, actor: str, payload: str) -> str:
    body = canonical_json([seq, ts, kind, subject, actor, payload])
    return hashlib.sha256(f"{prev}\n{body}".encode()).hexdigest()


def append(conn: sqlite3.Connection, kind: str, subject: str, actor: str, payload: dict[str, Any]) -> int:
    """Add one row inside the caller's (write) transaction; returns its sequence number."""
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    seq, prev = (head["seq"] + 1, head["hash"]) if head else (1, GENESIS)
    ts = datetime.now(UTC).isoformat(timespec="microseconds")
    text = canonical_json(payload)
    digest = _row_hash(prev, seq, ts, kind, subject, actor, text)
    conn.execute(
        "INSERT INTO audit (seq, ts, kind, subject, actor, payload, prev, hash) VALUES (?,?,?,?,?,?,?,?)",
        (seq, ts, kind, subject, actor, text, prev, digest),
    )
    conn.execute(
        "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        (seq, digest),
    )
    return seq


def rows(conn: sqlite3.Connection, subject: str | None = None, limit: int | None = None) -> list[AuditRow]:
    """Rows in order (the last `limit` of them), optionally only those about one request or run."""
    import json

    query = "SELECT * FROM audit"
    args: list[Any] = []
    if subject:
        query += " WHERE subject = ? OR payload LIKE ?"
        args += [subject, f'%"{subject}"%']
    query += " ORDER BY seq DESC"
    if limit:
        query += " LIMIT ?"
        args.append(limit)
    found = [row_model(AuditRow, r, payload=json.loads(r["payload"])) for r in conn.execute(query, args)]
    return list(reversed(found))


def parse_anchor(text: str) -> tuple[int, str]:
    """'SEQ:HASH' as printed by `tpu-agent audit anchor` -> (seq, hash). Raises ValueError."""
    seq, sep, digest = text.strip().partition(":")
    if not sep or not seq.isdigit() or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(
            f"an anchor looks like 42:{'0' * 8}... (SEQ:HASH from `tpu-agent audit anchor`), not {text!r}"
        )
    return int(seq), digest


def verify(conn: sqlite3.Connection, expect_heads: list[tuple[int, str]] | None = None) -> AuditCheck:
    """Walk the chain from the first row; report every edited, missing or reordered row, every recorded
    tampering, and every anchor (`expect_heads`) the log no longer holds."""
    problems: list[str] = []
    expected_seq, prev = 1, GENESIS
    count = 0
    hashes: dict[int, str] = {}
    for r in conn.execute("SELECT * FROM audit ORDER BY seq"):
        count += 1
        seq = r["seq"]
        hashes[seq] = r["hash"]
        if r["kind"] == "tamper":
            problems.append(f"row {seq}: {r['payload']}")
        if seq != expected_seq:
            problems.append(f"rows {expected_seq}..{seq - 1} are missing (deleted)")
        if r["prev"] != prev:
            problems.append(f"row {seq}: link to the previous row is broken (a row before it was changed)")
        again = _row_hash(r["prev"], seq, r["ts"], r["kind"], r["subject"], r["actor"], r["payload"])
        if again != r["hash"]:
            problems.append(f"row {seq}: contents do not match its hash (edited)")
        expected_seq, prev = seq + 1, r["hash"]
    head = conn.execute("SELECT seq, hash FROM audit_head WHERE id = 1").fetchone()
    head_seq, head_hash = (head["seq"], head["hash"]) if head else (0, GENESIS)
    if head_seq != expected_seq - 1 or head_hash != prev:
        problems.append(
            f"the log ends at row {expected_seq - 1} but its head records row {head_seq}"
            + (" (rows at the end were deleted)" if head_seq > expected_seq - 1 else "")
        )
    triggers = {r["name"] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for name in ("audit_no_update", "audit_no_delete"):
        if name not in triggers:
            problems.append(f"the append-only trigger {name} was removed")
    for seq, digest in expect_heads or []:
        if hashes.get(seq) != digest:
            found = "is missing" if seq not in hashes else f"has hash {hashes[seq][:16]}..."
            problems.append(
                f"anchor {seq}:{digest[:16]}... is not in the log (row {seq} {found}): rows were "
                "deleted or the chain was rewritten"
            )
    return AuditCheck(ok=not problems, rows=count, head_seq=head_seq, head_hash=head_hash, problems=problems)
