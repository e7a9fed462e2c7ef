"""Requests, single-use approvals, the audit chain, loop budgets, policy and path confinement (no SSH)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.remote_support.person import make_key
from tpu_runtime.remote import approvals as ap
from tpu_runtime.remote import audit, loops
from tpu_runtime.remote.approver import UnlockedApprover
from tpu_runtime.remote.confine import PathEscapeError, safe_relative
from tpu_runtime.remote.policy import Policy, ReadOnlyPolicy, auto_approval_rule
from tpu_runtime.remote.spec import (
    LoopPlan,
    RunSpec,
    SpecError,
    WorkerRef,
    plan_uploads,
    spec_digest,
    spec_to_json,
)
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.wrap import build_script

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn2c7b0GJ0lzgaFfR9Ti6kC4iyHBnzvYvX2m5n5k2rx"


def _spec(command: tuple[str, ...] = ("echo", "hi"), run_key: str = "r-x", **over: object) -> RunSpec:
    data: dict[str, object] = {
        "target": "lab",
        "target_kind": "hosts",
        "workers": [WorkerRef(index=0, name="w0", host="10.0.0.2", port=22, user="u", host_keys=(KEY,))],
        "command": command,
        "time_limit_s": 60,
        "remote_dir": ".tpu-agent",
        "script": build_script(remote_dir=".tpu-agent", run_key=run_key, time_limit_s=60),
    }
    data.update(over)
    return RunSpec.model_validate(data)


def _file(store: Store, now: float, ttl_s: float = ap.REQUEST_TTL_S, **spec: Any) -> ap.RunRequest:
    """A request as the executor files it: its wrapper script written for its own id."""
    rid = ap.new_id("r")
    return ap.create_request(store, _spec(run_key=rid, **spec), "agent", now=now, ttl_s=ttl_s, request_id=rid)


class _Person:
    """The person's key, made once for this module (unlocked as after typing the passphrase)."""

    key: UnlockedApprover
    trust: ap.Trust


PERSON = _Person()


@pytest.fixture(scope="module", autouse=True)
def _person_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    PERSON.key = make_key(tmp_path_factory.mktemp("approver"))
    PERSON.trust = ap.Trust(key=PERSON.key.key)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "state.db")


def test_approval_is_single_use_and_bound_to_the_digest(store: Store) -> None:
    req = _file(store, now=1000.0)
    assert req.state == "pending" and req.digest == spec_digest(req.spec)
    with pytest.raises(ap.ApprovalError) as wrong:
        ap.approve(store, req.id, "alice@tty", "sha256:" + "0" * 64, "cli", now=1001.0, signer=PERSON.key)
    assert wrong.value.reason == "digest_mismatch"
    approval = ap.approve(store, req.id, "alice@tty", req.digest, "cli", now=1001.0, signer=PERSON.key)
    with pytest.raises(ap.ApprovalError) as twice:
        ap.approve(store, req.id, "alice@tty", req.digest, "cli", now=1002.0, signer=PERSON.key)
    assert twice.value.reason == "not_pending"
    request, run_id, _ = ap.consume(store, approval, "engine", now=1003.0, trust=PERSON.trust)
    assert request.spec.command == ("echo", "hi") and run_id.startswith("run-")
    with pytest.raises(ap.ApprovalError) as replay:
        ap.consume(store, approval, "engine", now=1004.0, trust=PERSON.trust)
    assert replay.value.reason == "used"
    with store.read() as conn:
        kinds = [r.kind for r in audit.rows(conn)]
    assert kinds == ["request", "refused", "approved", "refused", "start", "refused"]


def test_expired_approval_and_expired_request_are_refused(store: Store) -> None:
    req = _file(store, now=0.0)
    approval = ap.approve(store, req.id, "alice", req.digest, "cli", now=10.0, ttl_s=600, signer=PERSON.key)
    with pytest.raises(ap.ApprovalError) as late:
        ap.consume(store, approval, "engine", now=611.0, trust=PERSON.trust)
    assert late.value.reason == "expired"
    stale = _file(store, now=0.0, ttl_s=3600)
    with pytest.raises(ap.ApprovalError) as old:
        ap.approve(store, stale.id, "alice", stale.digest, "cli", now=3601.0, signer=PERSON.key)
    assert old.value.reason == "expired"
    assert ap.get_request(store, stale.id).state == "expired"  # recorded even though approval was refused


def test_request_changed_after_approval_is_refused(store: Store) -> None:
    req = _file(store, now=0.0)
    approval = ap.approve(store, req.id, "alice", req.digest, "cli", now=1.0, signer=PERSON.key)
    tampered = _spec(command=("rm", "-rf", "/data"))
    with sqlite3.connect(store.path) as conn:  # someone edits the stored request after the person said yes
        conn.execute("UPDATE requests SET spec = ? WHERE id = ?", (spec_to_json(tampered), req.id))
    with pytest.raises(ap.ApprovalError) as changed:
        ap.consume(store, approval, "engine", now=2.0, trust=PERSON.trust)
    assert changed.value.reason == "changed"
    forged = approval.model_copy(update={"digest": spec_digest(tampered)})
    with pytest.raises(ap.ApprovalError) as fake:
        ap.consume(store, forged, "engine", now=2.0, trust=PERSON.trust)
    assert fake.value.reason == "changed"
    invented = approval.model_copy(update={"id": "a-0000000000"})
    with pytest.raises(ap.ApprovalError) as unknown:
        ap.consume(store, invented, "engine", now=2.0, trust=PERSON.trust)
    assert unknown.value.reason == "unknown"


def test_one_approval_used_from_two_threads_starts_one_run(store: Store) -> None:
    req = _file(store, now=0.0)
    approval = ap.approve(store, req.id, "alice", req.digest, "cli", now=1.0, signer=PERSON.key)
    outcomes: list[str] = []
    barrier = threading.Barrier(4)

    def use() -> None:
        barrier.wait()
        try:
            ap.consume(store, approval, "engine", now=2.0, trust=PERSON.trust)
            outcomes.append("ran")
        except ap.ApprovalError as exc:
            outcomes.append(exc.reason)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["ran", "used", "used", "used"]


def test_audit_verify_finds_edits_and_deletions(store: Store) -> None:
    for i in range(4):
        req = _file(store, now=float(i), command=("echo", str(i)))
        ap.deny(store, req.id, "alice", "no", now=float(i))
    with store.read() as conn:
        clean = audit.verify(conn)
    assert clean.ok and clean.rows == 8
    with sqlite3.connect(store.path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 3")

    edited = Path(str(store.path) + ".edited")
    edited.write_bytes(store.path.read_bytes())
    with sqlite3.connect(edited) as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("UPDATE audit SET actor = 'mallory' WHERE seq = 3")
        check = audit.verify(_row_conn(conn))
    assert not check.ok
    assert any("row 3: contents do not match" in p for p in check.problems)
    assert any("audit_no_update was removed" in p for p in check.problems)

    with sqlite3.connect(store.path) as conn:
        conn.execute("DROP TRIGGER audit_no_delete")
        conn.execute("DELETE FROM audit WHERE seq = 5")
        middle = audit.verify(_row_conn(conn))
        assert any("rows 5..5 are missing" in p for p in middle.problems)
        conn.execute("DELETE FROM audit WHERE seq = 8")
        tail = audit.verify(_row_conn(conn))
        assert any("head records row 8" in p for p in tail.problems)


def _row_conn(conn: sqlite3.Connection) -> sqlite3.Connection:
    conn.row_factory = sqlite3.Row
    return conn


def _loop_request(store: Store, max_attempts: int, max_seconds: float = 100.0) -> tuple[str, LoopPlan]:
    plan = LoopPlan(
        name="tune",
        attempts=(("k", "1"), ("k", "2"), ("k", "3")),
        max_attempts=max_attempts,
        max_seconds=max_seconds,
    )
    req = _file(store, now=0.0, command=plan.attempts[0], loop=plan)
    approval = ap.approve(store, req.id, "alice", req.digest, "cli", now=0.0, signer=PERSON.key)
    ap.consume(store, approval, "engine", now=0.0, trust=PERSON.trust)
    loops.open_loop(store, req.id, approval.id, plan, now=0.0)
    return req.id, plan


def test_loop_attempts_count_when_interrupted_and_respect_the_budget(store: Store) -> None:
    rid, plan = _loop_request(store, max_attempts=4)
    assert loops.begin_attempt(store, rid, plan, now=1.0) == (1, 0)
    loops.finish_attempt(store, rid, 1, "ok", "", now=2.0)
    assert loops.begin_attempt(store, rid, plan, now=3.0) == (2, 1)  # ... and the runner dies here
    assert loops.mark_interrupted(store, rid, now=4.0) == 1  # resume
    assert loops.begin_attempt(store, rid, plan, now=5.0) == (3, 1)  # plan index 1 again, as attempt 3
    loops.finish_attempt(store, rid, 3, "failed", "exit 1", now=6.0)
    assert loops.begin_attempt(store, rid, plan, now=7.0) == (4, 2)
    loops.finish_attempt(store, rid, 4, "ok", "", now=8.0)
    assert loops.begin_attempt(store, rid, plan, now=9.0) is None  # every planned attempt finished
    progress = loops.progress(store, rid, plan)
    assert progress is not None and progress.used == 4 and progress.complete
    assert [a.state for a in progress.attempts] == ["ok", "interrupted", "failed", "ok"]

    tight, plan2 = _loop_request(store, max_attempts=2)
    loops.begin_attempt(store, tight, plan2, now=1.0)
    loops.mark_interrupted(store, tight, now=2.0)
    loops.begin_attempt(store, tight, plan2, now=3.0)
    loops.finish_attempt(store, tight, 2, "ok", "", now=4.0)
    with pytest.raises(loops.BudgetExhausted, match="all 2 approved attempts are used"):
        loops.begin_attempt(store, tight, plan2, now=5.0)

    slow, plan3 = _loop_request(store, max_attempts=9, max_seconds=10.0)
    with pytest.raises(loops.BudgetExhausted, match="10 s time budget"):
        loops.begin_attempt(store, slow, plan3, now=10.0)


def test_budget_is_checked_in_the_same_transaction_as_the_start(store: Store) -> None:
    rid, plan = _loop_request(store, max_attempts=2)
    started: list[object] = []
    barrier = threading.Barrier(6)

    def go() -> None:
        barrier.wait()
        try:
            started.append(loops.begin_attempt(store, rid, plan, now=1.0))
        except loops.BudgetExhausted:
            started.append("refused")

    threads = [threading.Thread(target=go) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert started.count("refused") == 4
    assert sorted(s for s in started if s != "refused") == [(1, 0), (2, 0)]  # type: ignore[type-var]


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        (("tpu-info",), True),
        (("tpu-info", "--streaming"), False),
        (("df", "-h"), True),
        (("free", "-m"), True),
        (("ls", "-la", "/var/log/tpu"), True),
        (("ls", "-la", "/etc"), False),
        (("ls", "--color=always", "/var/log/tpu"), False),
        (("cat", "/var/log/tpu/tpu_driver.INFO"), True),
        (("cat", "/var/log/tpu/../../etc/shadow"), False),
        (("cat", "-A", "/var/log/tpu/x"), False),
        (("tail", "-n", "50", "/var/log/tpu/x.log"), True),
        (("tail", "-f", "/var/log/tpu/x.log"), False),
        (("tail", "-n", "50"), False),
        (("rm", "-rf", "/var/log/tpu"), False),
        (("sh", "-c", "tpu-info"), False),
    ],
)
def test_policy_lets_only_checked_read_only_commands_through(command: tuple[str, ...], allowed: bool) -> None:
    policy = Policy(read_only=ReadOnlyPolicy(enabled=True, log_dirs=["/var/log/tpu"]))
    assert (auto_approval_rule(_spec(command=command), policy) is not None) == allowed
    assert auto_approval_rule(_spec(command=command), Policy()) is None  # off unless the user turns it on


def test_policy_never_covers_env_uploads_or_long_limits() -> None:
    policy = Policy(read_only=ReadOnlyPolicy(enabled=True, log_dirs=["/var/log/tpu"]))
    assert auto_approval_rule(_spec(command=("df",), env={"LD_PRELOAD": "/opt/x.so"}), policy) is None
    assert auto_approval_rule(_spec(command=("df",), time_limit_s=3601), policy) is None
    other = Policy(read_only=ReadOnlyPolicy(enabled=True, targets=["prod"]))
    assert auto_approval_rule(_spec(command=("df",)), other) is None


@pytest.mark.parametrize("dest", ["../x", "/etc/passwd", "a/../../b", "~/x", "a/\x00b", "", "..", "./.."])
def test_upload_destinations_cannot_leave_the_run_folder(dest: str, tmp_path: Path) -> None:
    with pytest.raises(PathEscapeError):
        safe_relative(dest)
    source = tmp_path / "model.py"
    source.write_text("x = 1\n")
    with pytest.raises(SpecError):
        plan_uploads([(source, dest or "..")])


def test_upload_plan_hashes_files_and_refuses_symlinks(tmp_path: Path) -> None:
    folder = tmp_path / "kernel"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.py").write_text("a")
    (folder / "sub" / "b.py").write_text("bb")
    planned = plan_uploads([(folder, None), (tmp_path / "kernel" / "a.py", "./x//y.py")])
    assert [(u.dest, u.size) for u in planned] == [("kernel/a.py", 1), ("kernel/sub/b.py", 2), ("x/y.py", 1)]
    (folder / "link").symlink_to("/etc/passwd")
    with pytest.raises(SpecError, match="symlink"):
        plan_uploads([(folder, None)])


def test_the_worker_gate_parses_as_python_3_8() -> None:
    """The gate runs on each worker's own Python 3, which may be as old as 3.8 (Ubuntu 20.04)."""
    import ast

    from tpu_runtime.remote import worker_gate

    source = Path(worker_gate.__file__).read_text()
    ast.parse(source, feature_version=(3, 8))
    for line in source.splitlines():  # library calls newer than 3.8
        assert ".removeprefix(" not in line and ".removesuffix(" not in line, line
