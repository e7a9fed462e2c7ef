"""Attack 5: rewriting the audit log whole. The chain alone cannot catch it; anchors outside the file do
(`audit anchor` / `verify --expect-head`, and the ledger each worker's gate keeps: `verify --remote`)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.sshd import FarmUnavailable, start_farm
from tests.security.conftest import make_engine, run
from tpu_runtime.remote import audit
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.store import Store


def _ran(engine: RemoteEngine, n: int = 2) -> None:
    for i in range(n):
        request = engine.request_run("lo", ["echo", str(i)])
        assert run(engine, person.approve(engine, request.id))[0].ok


def _head(engine: RemoteEngine) -> tuple[int, str]:
    check = engine.verify_audit()
    return check.head_seq, check.head_hash


DETECTED = ("truncated or rewritten", "does not record", "belong to another audit log")


def _detected(problems: list[str]) -> bool:
    return any(word in p for p in problems for word in DETECTED)


def _rechain(path: Path, keep_through: int | None = None, edit: bool = True) -> None:
    """What an attacker with sqlite3 does: drop the triggers, cut or edit rows, recompute every hash and
    the head, and put the triggers back so nothing looks touched."""
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("DROP TRIGGER audit_no_delete")
        if keep_through is not None:
            conn.execute("DELETE FROM audit WHERE seq > ?", (keep_through,))
        prev = audit.GENESIS
        for r in list(conn.execute("SELECT * FROM audit ORDER BY seq")):
            payload = r["payload"].replace('"echo"', '"true"') if edit else r["payload"]
            digest = audit._row_hash(prev, r["seq"], r["ts"], r["kind"], r["subject"], r["actor"], payload)
            conn.execute(
                "UPDATE audit SET payload = ?, prev = ?, hash = ? WHERE seq = ?",
                (payload, prev, digest, r["seq"]),
            )
            prev = digest
        last = conn.execute("SELECT MAX(seq) FROM audit").fetchone()[0]
        conn.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", (last, prev))
        conn.executescript(
            "CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit "
            "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;"
            "CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit "
            "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;"
        )


def test_truncated_log_with_the_head_moved_back(engine: RemoteEngine, home: Path) -> None:
    _ran(engine, 1)
    anchor = _head(engine)
    _ran(engine, 1)
    assert engine.verify_audit([anchor]).ok
    _rechain(engine.store.path, keep_through=anchor[0] - 2, edit=False)  # "the last runs never happened"
    fresh = make_engine(home)
    assert fresh.verify_audit().ok  # consistent in itself: the chain cannot tell
    assert not fresh.verify_audit([anchor]).ok
    problems = asyncio.run(fresh.verify_remote())
    assert any("truncated or rewritten" in p or "does not record" in p for p in problems), problems
    assert _detected(problems)


def test_recomputed_chain(engine: RemoteEngine, home: Path) -> None:
    _ran(engine)
    anchor = _head(engine)
    _rechain(engine.store.path)
    fresh = make_engine(home)
    assert fresh.verify_audit().ok
    assert not fresh.verify_audit([anchor]).ok
    assert _detected(asyncio.run(fresh.verify_remote()))


def test_an_appended_forged_start(engine: RemoteEngine) -> None:
    request = engine.request_run("lo", ["echo", "x"], workers="0")
    with engine.store.write() as conn:  # through our own code, so the chain stays valid
        audit.append(
            conn,
            "start",
            "run-forged",
            "cli",
            {"request": request.id, "approval": "a-x", "digest": request.digest},
        )
    check = engine.verify_audit()
    assert not check.ok and any("not in the state file" in p for p in check.problems)


def test_a_deleted_log(engine: RemoteEngine, home: Path) -> None:
    _ran(engine, 1)
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    fresh = make_engine(home)
    assert fresh.verify_audit().ok  # an empty log is a valid log
    problems = asyncio.run(fresh.verify_remote())
    assert any("belong to another audit log" in p for p in problems), problems


def test_a_dropped_trigger_is_recorded_before_it_is_recreated(engine: RemoteEngine) -> None:
    request = engine.request_run("lo", ["echo", "x"])
    engine.deny(request.id, "alice", "no")
    with sqlite3.connect(engine.store.path) as conn:
        conn.execute("DROP TRIGGER audit_no_delete")
    Store(engine.store.path)  # any later open re-creates it, and says so in the log first
    with engine.store.read() as conn:
        triggers = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    assert {"audit_no_update", "audit_no_delete"} <= triggers
    check = engine.verify_audit()
    assert not check.ok and any(
        "append-only triggers were removed: audit_no_delete" in p for p in check.problems
    )


def test_a_clean_log_verifies_everywhere(tmp_path: Path) -> None:
    try:
        farm = start_farm(2, tmp_path / "own-farm")  # workers whose ledgers hold only this log's runs
    except FarmUnavailable as exc:
        pytest.skip(f"no sshd for the security tests: {exc}")
    try:
        home = tmp_path / "home"
        home.mkdir()
        (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
        person.share_key(person.farm_key_dir(farm.session), home)
        _clean(make_engine(home))
    finally:
        farm.close()


def _clean(engine: RemoteEngine) -> None:
    _ran(engine, 1)
    anchor = _head(engine)
    assert engine.verify_audit([anchor]).ok
    assert asyncio.run(engine.verify_remote()) == []
