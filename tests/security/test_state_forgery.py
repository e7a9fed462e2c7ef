"""Attack 2: whoever can write state.db (a coding agent runs as the same user) tries to approve."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from pathlib import Path

import pytest

from tests.remote_support import person
from tests.remote_support.sshd import SshdFarm
from tests.security.conftest import make_engine, marker_command, run
from tpu_runtime.remote import approvals as ap
from tpu_runtime.remote import approver
from tpu_runtime.remote.approvals import Approval, ApprovalError, statement_text
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.spec import spec_digest, spec_from_json, spec_to_json


def _marker(farm: SshdFarm) -> Path:
    return farm.session / f"marker-{uuid.uuid4().hex}"


def _sql(engine: RemoteEngine, *statements: tuple[str, tuple[object, ...]]) -> None:
    """What the agent does: open the file with sqlite3 and write."""
    with sqlite3.connect(engine.store.path) as conn:
        for sql, args in statements:
            conn.execute(sql, args)


def _refused(engine: RemoteEngine, approval: Approval) -> ApprovalError:
    with pytest.raises(ApprovalError) as refused:
        run(engine, approval)
    return refused.value


def test_an_inserted_approval_row_runs_nothing(engine: RemoteEngine, farm: SshdFarm) -> None:
    marker = _marker(farm)
    request = engine.request_run("lo", marker_command(marker), workers="0")
    _sql(
        engine,
        (
            "INSERT INTO approvals (id, request_id, digest, approver, via, created_at, expires_at) "
            "VALUES ('a-forged', ?, ?, 'alice@tty', 'approvals-cli', 0, 9e12)",
            (request.id, request.digest),
        ),
        ("UPDATE requests SET state = 'approved' WHERE id = ?", (request.id,)),
    )
    forged = engine.approval_for(request.id)
    assert forged is not None and forged.id == "a-forged"
    assert _refused(engine, forged).reason == "unsigned"
    # the same row claiming a policy rule or an MCP dialog fares no better
    for via, approver_name in (("policy", "policy:read_only:cat"), ("mcp-elicitation", "alice@mcp")):
        _sql(
            engine, ("UPDATE approvals SET via = ?, approver = ? WHERE id = 'a-forged'", (via, approver_name))
        )
        assert _refused(engine, engine.approval_for(request.id) or forged).reason == "unsigned"
    assert not marker.exists()


def test_a_recomputed_digest_runs_nothing(engine: RemoteEngine, farm: SshdFarm) -> None:
    marker = _marker(farm)
    request = engine.request_run("lo", ["echo", "harmless"], workers="0")
    approval = person.approve(engine, request.id)
    evil = request.spec.model_copy(update={"command": tuple(marker_command(marker))})
    digest = spec_digest(evil)
    _sql(
        engine,
        ("UPDATE requests SET spec = ?, digest = ? WHERE id = ?", (spec_to_json(evil), digest, request.id)),
        ("UPDATE approvals SET digest = ? WHERE id = ?", (digest, approval.id)),
    )
    assert _refused(engine, approval.model_copy(update={"digest": digest})).reason == "unsigned"
    assert not marker.exists()


def test_an_extended_expiry_and_a_cleared_used_at_run_nothing(engine: RemoteEngine, farm: SshdFarm) -> None:
    clock = [0.0]
    import time

    clock[0] = time.time()
    late = make_engine(engine.store.path.parent, clock=lambda: clock[0])
    marker = _marker(farm)
    request = late.request_run("lo", marker_command(marker), workers="0")
    approval = person.approve(late, request.id)
    clock[0] += 3600  # the approval expired unused; the agent pushes its expiry out
    _sql(late, ("UPDATE approvals SET expires_at = ? WHERE id = ?", (clock[0] + 600, approval.id)))
    assert _refused(late, approval.model_copy(update={"expires_at": clock[0] + 600})).reason == "unsigned"
    assert not marker.exists()

    fresh = engine.request_run("lo", marker_command(marker), workers="0")
    used = person.approve(engine, fresh.id)
    result, _ = run(engine, used)
    assert result.ok and marker.read_text() == "ran\n"
    _sql(
        engine,
        ("UPDATE approvals SET used_at = NULL, run_id = NULL WHERE id = ?", (used.id,)),
        ("UPDATE requests SET state = 'approved' WHERE id = ?", (fresh.id,)),
    )
    assert _refused(engine, used).reason == "used"  # the local log still shows its start

    # the agent also wipes every local trace of the first run; the worker's own ledger still refuses
    _sql(
        engine,
        ("DROP TRIGGER audit_no_delete", ()),
        ("DELETE FROM audit WHERE kind = 'start' AND payload LIKE ?", (f'%"{used.id}"%',)),
        ("DELETE FROM runs WHERE approval_id = ?", (used.id,)),
    )
    replay, _ = run(make_engine(engine.store.path.parent), used)
    assert replay.state == "failed" and replay.workers[0].error_kind == "gate"
    assert "already used on this worker" in str(replay.workers[0].error)
    assert marker.read_text() == "ran\n"  # ran once, never twice
    assert not make_engine(engine.store.path.parent).verify_audit().ok


def test_a_key_of_the_agents_own_is_refused_by_the_workers(
    engine: RemoteEngine, farm: SshdFarm, home: Path
) -> None:
    warmup = engine.request_run("lo", ["true"])  # the workers pin the person's key on a first run
    assert run(engine, person.approve(engine, warmup.id))[0].ok
    marker = _marker(farm)
    request = engine.request_run("lo", marker_command(marker), workers="1")
    # the agent replaces the key files with a key whose passphrase it knows, and signs
    approver.init_key(home / "approver", "agent's own passphrase", replace=True, cost=2**14)
    agents_key = approver.unlock(home / "approver", "agent's own passphrase")
    with pytest.raises(ApprovalError, match="no earlier key of yours endorsed"):
        make_engine(home).approve(request.id, "alice@tty", request.digest, key=agents_key)
    # it writes the signed approval itself, and announces its key in the log through our own code
    make_engine(home).announce_key(agents_key.key, "alice@tty")
    forged = ap.approve(
        make_engine(home).store,
        request.id,
        "alice@tty",
        request.digest,
        "cli",
        time.time(),
        signer=agents_key,
    )
    with pytest.raises(ApprovalError, match="no earlier key of yours endorsed"):
        run(make_engine(home), forged)
    check = make_engine(home).verify_audit()
    assert not check.ok and "no earlier key of yours endorsed" in check.problems[0]
    assert not marker.exists()
    # it also moves the log aside, so this machine has no record of the person's key: the workers do
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    fresh = make_engine(home)
    again = fresh.request_run("lo", marker_command(marker), workers="1")
    result, _ = run(make_engine(home), fresh.approve(again.id, "alice@tty", again.digest, key=agents_key))
    assert result.state == "failed" and result.workers[0].error_kind == "gate"
    assert "not the approver key pinned on this worker" in str(result.workers[0].error)
    assert not marker.exists()
    problems = asyncio.run(make_engine(home).verify_remote())
    assert any("pins approver key" in p for p in problems)


@pytest.mark.slow
def test_replacing_the_key_the_right_way_is_endorsed(engine: RemoteEngine, home: Path) -> None:
    """The person replaces their key with `approver init --replace` (old passphrase, then a new one):
    the old key endorses the new one, and approvals signed with it count here."""
    import os
    import sys

    from tests.conftest import REPO
    from tests.remote_support.pty_person import PtySession

    first = engine.request_run("lo", ["true"], workers="0")
    person.approve(engine, first.id)  # the log now names the person's key
    env = {**os.environ, "TPU_AGENT_HOME": str(home), "COLUMNS": "200"}
    term = PtySession(
        [sys.executable, "-m", "tpu_runtime.cli.app", "approver", "init", "--replace"], env, REPO
    )
    try:
        for prompt in (b"Passphrase for approver key", b"New approver passphrase", b"Type it again"):
            term.expect(prompt)
            term.send(person.PASSPHRASE.encode() + b"\n")
        assert term.finish() == 0
    finally:
        term.close()
    fresh = make_engine(home)
    assert fresh.key_problem() is None
    later = fresh.request_run("lo", ["true"], workers="0")
    approval = person.approve(fresh, later.id)
    assert approval.signature is not None and fresh.verify_audit().ok


def test_the_statement_binds_request_digest_approver_and_expiry(engine: RemoteEngine) -> None:
    request = engine.request_run("lo", ["true"], workers="0")
    approval = person.approve(engine, request.id)
    assert approval.statement == statement_text(
        approval.id,
        request.id,
        request.digest,
        approval.approver,
        approval.created_at,
        approval.expires_at,
        person.unlocked(engine.approver_path).key.fingerprint,
    )
    assert spec_digest(spec_from_json(spec_to_json(request.spec))) == approval.digest
