"""The executor against real sshd processes on loopback: four workers, each its own sshd.

Needs OpenSSH's server (`apt-get install -y openssh-server`); as root the tests log in a non-root user
they create. Skipped, with the reason, where sshd or useradd is unavailable.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.engine import collect
from tests.remote_support.sshd import SshdFarm, farm_or_skip
from tpu_runtime.remote import audit
from tpu_runtime.remote.approvals import ApprovalError
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.policy import sign_policy
from tpu_runtime.remote.report import OutputLine, RunEvent, RunResult
from tpu_runtime.remote.spec import LoopPlan, spec_to_json
from tpu_runtime.remote.store import Store

WORKERS = 4


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    yield from farm_or_skip(WORKERS, tmp_path_factory.mktemp("farm"))


EngineFactory = Callable[..., RemoteEngine]


@pytest.fixture
def make_engine(farm: SshdFarm, tmp_path: Path) -> EngineFactory:
    def make(
        target: dict[str, Any] | None = None, policy: dict[str, Any] | None = None, **kw: Any
    ) -> RemoteEngine:
        (tmp_path / "targets.yaml").write_text(
            yaml.safe_dump({"targets": {"lo": target or farm.hosts_target()}})
        )
        (tmp_path / "policy.yaml").write_text(yaml.safe_dump(policy or {}))
        engine = RemoteEngine(
            store=Store(tmp_path / "state.db"),
            targets_path=tmp_path / "targets.yaml",
            policy_path=tmp_path / "policy.yaml",
            state_path=tmp_path / "state",
            approver_path=person.farm_key_dir(farm.session),
            **kw,
        )
        if policy:
            person.sign_policy(engine)
        return engine

    return make


async def _run(engine: RemoteEngine, request_id: str) -> tuple[RunResult, list[OutputLine]]:
    request = engine.get_request(request_id)
    approval = engine.approval_for(request.id) or person.approve(engine, request.id)
    return await collect(engine, approval, close=False)


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def test_all_workers_succeed_with_prefixed_output_and_audit(
    make_engine: EngineFactory, farm: SshdFarm
) -> None:
    engine = make_engine()
    command = ["sh", "-c", 'echo "hello from $TPU_AGENT_WORKER"; echo "warn $TPU_AGENT_WORKER_NAME" >&2']
    request = engine.request_run("lo", command, time_limit_s=30)
    assert [w.port for w in request.spec.workers] == farm.ports

    async def go() -> tuple[RunResult, list[OutputLine]]:
        try:
            return await _run(engine, request.id)
        finally:
            await engine.aclose()

    result, lines = asyncio.run(go())
    assert result.state == "succeeded" and len(result.workers) == WORKERS
    for w in result.workers:
        assert (w.status, w.exit_status, w.stdout_lines, w.stderr_lines) == ("ok", 0, 1, 1)
        assert w.stdout_sha256 == hashlib.sha256(f"hello from {w.worker}\n".encode()).hexdigest()
        mine = [(line.stream, line.text) for line in lines if line.worker == w.worker]
        assert sorted(mine) == [("stderr", f"warn w{w.worker}"), ("stdout", f"hello from {w.worker}")]
    assert lines[0].prefixed().startswith(f"[{lines[0].worker}:w{lines[0].worker}] ")
    with engine.store.read() as conn:
        rows = audit.rows(conn)
        assert audit.verify(conn).ok
    assert [r.kind for r in rows] == ["request", "approver_key", "approved", "start", "result"]
    recorded = {w["worker"]: w["stdout_sha256"] for w in rows[-1].payload["workers"]}
    assert recorded == {w.worker: w.stdout_sha256 for w in result.workers}


def test_one_worker_down_others_finish_and_its_error_is_clear(
    make_engine: EngineFactory, farm: SshdFarm
) -> None:
    farm.stop(2)
    try:
        engine = make_engine()
        request = engine.request_run("lo", ["echo", "ok"], time_limit_s=30)
        start = time.monotonic()
        result, _ = asyncio.run(_run_and_close(engine, request.id))
        elapsed = time.monotonic() - start
    finally:
        farm.start(2)
    by_worker = {w.worker: w for w in result.workers}
    assert result.state == "failed"
    assert by_worker[2].status == "failed" and by_worker[2].error_kind == "refused"
    assert "connection refused" in (by_worker[2].error or "")
    assert all(by_worker[i].status == "ok" for i in (0, 1, 3))
    assert elapsed < 10  # a refused worker does not hold the others up


async def _run_and_close(engine: RemoteEngine, request_id: str) -> tuple[RunResult, list[OutputLine]]:
    try:
        return await _run(engine, request_id)
    finally:
        await engine.aclose()


def test_hung_command_is_cancelled_and_the_remote_processes_are_gone(make_engine: EngineFactory) -> None:
    engine = make_engine()
    hang = 'sleep 300 & echo "pids $$ $!"; wait'
    request = engine.request_run("lo", ["sh", "-c", hang], time_limit_s=600)
    approval = person.approve(engine, request.id)
    pids: dict[int, list[int]] = {}

    async def go() -> RunResult:
        run_id = await engine.start(approval)
        try:
            async for event in engine.stream(run_id):
                if isinstance(event, OutputLine) and event.text.startswith("pids "):
                    pids[event.worker] = [int(p) for p in event.text.split()[1:]]
                    if len(pids) == WORKERS:
                        assert engine.status(run_id).state == "running"  # type: ignore[union-attr]
                        engine.cancel(run_id)
            return await engine.wait(run_id)
        finally:
            await engine.aclose()

    start = time.monotonic()
    result = asyncio.run(go())
    assert time.monotonic() - start < 20
    assert result.state == "cancelled"
    assert all(w.status == "cancelled" and w.remote_stopped for w in result.workers)
    everyone = [pid for group in pids.values() for pid in group]
    assert len(everyone) == 2 * WORKERS and all(pid > 1 for pid in everyone)
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in everyone) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in everyone if _alive(pid)], "remote processes survived the cancel"


def test_time_limit_stops_the_command(make_engine: EngineFactory) -> None:
    engine = make_engine()
    request = engine.request_run("lo", ["sleep", "30"], workers="0", time_limit_s=1)
    start = time.monotonic()
    result, _ = asyncio.run(_run_and_close(engine, request.id))
    assert time.monotonic() - start < 10
    only = result.workers[0]
    assert (only.status, only.error_kind, only.exit_status) == ("failed", "time_limit", 124)


def test_command_changed_after_approval_is_refused_and_nothing_runs(
    make_engine: EngineFactory, farm: SshdFarm
) -> None:
    engine = make_engine()
    marker = farm.session / "changed-marker"
    request = engine.request_run("lo", ["echo", "harmless"], workers="0")
    approval = person.approve(engine, request.id)
    evil = request.spec.model_copy(update={"command": ("touch", str(marker))})
    with engine.store.write() as conn:
        conn.execute("UPDATE requests SET spec = ? WHERE id = ?", (spec_to_json(evil), request.id))

    async def go() -> None:
        async for _ in engine.execute(approval):
            pass

    with pytest.raises(ApprovalError, match="changed after it was approved"):
        asyncio.run(go())
    assert not marker.exists()


def test_replayed_and_expired_approvals_are_refused(make_engine: EngineFactory) -> None:
    clock = [time.time()]  # the workers' gates check expiry against their own clock too
    engine = make_engine(clock=lambda: clock[0])
    request = engine.request_run("lo", ["true"], workers="0")
    approval = person.approve(engine, request.id)
    result, _ = asyncio.run(_run_and_close(engine, request.id))
    assert result.state == "succeeded"

    async def again() -> None:
        async for _ in engine.execute(approval):
            pass

    with pytest.raises(ApprovalError) as replay:
        asyncio.run(again())
    assert replay.value.reason == "used"

    late = engine.request_run("lo", ["true"], workers="0")
    late_approval = person.approve(engine, late.id)
    clock[0] += 601
    with pytest.raises(ApprovalError) as expired:
        asyncio.run(_execute_only(engine, late_approval))
    assert expired.value.reason == "expired"


async def _execute_only(engine: RemoteEngine, approval: Any) -> None:
    async for _ in engine.execute(approval):
        pass


def test_two_approved_runs_at_once_stay_separate(make_engine: EngineFactory) -> None:
    engine = make_engine()
    first = engine.request_run("lo", ["sh", "-c", "sleep 0.3; echo first"], time_limit_s=30)
    second = engine.request_run("lo", ["sh", "-c", "sleep 0.3; echo second"], time_limit_s=30)

    async def both() -> list[tuple[RunResult, list[OutputLine]]]:
        try:
            return list(await asyncio.gather(_run(engine, first.id), _run(engine, second.id)))
        finally:
            await engine.aclose()

    start = time.monotonic()
    (r1, lines1), (r2, lines2) = asyncio.run(both())
    assert time.monotonic() - start < 5
    assert r1.state == r2.state == "succeeded" and r1.run_id != r2.run_id
    assert sorted(line.text for line in lines1) == ["first"] * WORKERS
    assert sorted(line.text for line in lines2) == ["second"] * WORKERS


def test_shell_metacharacters_in_names_arguments_and_env_stay_literal(
    make_engine: EngineFactory, farm: SshdFarm
) -> None:
    marker = farm.session / "injected"
    evil_names = [f"w0; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", "w3' \"|&<>*"]
    engine = make_engine(target=farm.hosts_target(names=evil_names))
    args = [
        f"; touch {marker}",
        f"$(touch {marker})",
        f"`touch {marker}`",
        "&&",
        "|",
        "'",
        '"',
        "$HOME",
        "*",
        "\\n",
    ]
    request = engine.request_run(
        "lo",
        ["printf", "%s\\n", *args],
        env={"EVIL": f"$(touch {marker}); `touch {marker}`"},
        time_limit_s=30,
    )
    result, lines = asyncio.run(_run_and_close(engine, request.id))
    assert result.state == "succeeded"
    for w in range(WORKERS):
        assert [line.text for line in lines if line.worker == w] == args
    show = engine.request_run(
        "lo", ["sh", "-c", 'printf "%s|%s\\n" "$TPU_AGENT_WORKER_NAME" "$EVIL"'], env={"EVIL": "$(id)"}
    )
    result, lines = asyncio.run(_run_and_close(engine, show.id))
    assert sorted(line.text for line in lines) == sorted(f"{name}|$(id)" for name in evil_names)
    assert not marker.exists()


def test_uploads_land_in_the_run_folder_and_downloads_come_back(
    make_engine: EngineFactory, tmp_path: Path
) -> None:
    engine = make_engine()
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    (kernel / "k.py").write_text("print('kernel')\n")
    # loopback workers share one disk, so each writes its own file name
    script = 'cat kernel/k.py; mkdir -p prof; echo "w$TPU_AGENT_WORKER" > "prof/trace-$TPU_AGENT_WORKER.txt"'
    request = engine.request_run(
        "lo", ["sh", "-c", script], uploads=[(kernel, None)], downloads=["prof"], time_limit_s=30
    )
    result, lines = asyncio.run(_run_and_close(engine, request.id))
    assert result.state == "succeeded"
    assert {line.text for line in lines} == {"print('kernel')"}
    for w in result.workers:
        fetched = Path(w.downloads[0]) / f"trace-{w.worker}.txt"
        assert fetched.read_text() == f"w{w.worker}\n"
        assert fetched.is_relative_to(tmp_path / "state" / "downloads" / request.id / f"w{w.worker}")


def test_upload_through_a_remote_symlink_cannot_escape(
    make_engine: EngineFactory, farm: SshdFarm, tmp_path: Path
) -> None:
    engine = make_engine()
    payload = tmp_path / "model.bin"
    payload.write_bytes(b"weights")
    request = engine.request_run("lo", ["true"], workers="0", uploads=[(payload, "escape/model.bin")])
    outside = farm.session / "outside"
    outside.mkdir()
    farm.chown(outside)
    files = Path(farm.remote_dir) / "runs" / request.id / "files"
    files.mkdir(parents=True)
    for folder in (files.parent.parent, files.parent, files):
        farm.chown(folder)
    (files / "escape").symlink_to(outside)
    result, _ = asyncio.run(_run_and_close(engine, request.id))
    only = result.workers[0]
    assert (only.status, only.error_kind) == ("failed", "setup")
    assert "outside the run folder" in (only.error or "")
    assert list(outside.iterdir()) == []


def test_pinned_host_key_mismatch_and_wrong_login_key_are_classified(
    make_engine: EngineFactory, farm: SshdFarm, tmp_path: Path
) -> None:
    import asyncssh

    other = asyncssh.generate_private_key("ssh-ed25519")
    target = farm.hosts_target()
    target["hosts"] = target["hosts"][:2]
    target["hosts"][1]["host_key"] = other.export_public_key("openssh").decode()
    engine = make_engine(target=target)
    result, _ = asyncio.run(_run_and_close(engine, engine.request_run("lo", ["true"]).id))
    assert [(w.status, w.error_kind) for w in result.workers] == [("ok", None), ("failed", "host_key")]

    stranger = tmp_path / "stranger_key"
    other.write_private_key(str(stranger))
    os.chmod(stranger, 0o600)
    engine = make_engine(target=farm.hosts_target(identity_file=str(stranger)))
    result, _ = asyncio.run(_run_and_close(engine, engine.request_run("lo", ["true"], workers="0").id))
    assert result.workers[0].error_kind == "auth"


def test_policy_runs_a_read_only_command_without_a_prompt(make_engine: EngineFactory, farm: SshdFarm) -> None:
    logs = farm.session / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "tpu.log").write_text("line1\nline2\nline3\n")
    farm.chown(logs)
    engine = make_engine(policy={"read_only": {"enabled": True, "log_dirs": [str(logs)]}})
    request = engine.request_run(
        "lo", ["tail", "-n", "2", str(logs / "tpu.log")], workers="1", time_limit_s=20
    )
    assert request.state == "approved" and request.decided_by == "policy:read_only:tail"
    result, lines = asyncio.run(_run_and_close(engine, request.id))
    assert result.state == "succeeded" and [line.text for line in lines] == ["line2", "line3"]
    needs_person = engine.request_run("lo", ["cat", "/etc/hostname"], workers="1", time_limit_s=20)
    assert needs_person.state == "pending" and engine.approval_for(needs_person.id) is None


def test_loop_runs_its_plan_within_budget_and_resumes_after_a_crash(make_engine: EngineFactory) -> None:
    from tpu_runtime.remote import loops

    engine = make_engine()
    plan = LoopPlan(
        name="autotune",
        attempts=tuple(("sh", "-c", f"echo block={b} attempt=$TPU_AGENT_ATTEMPT") for b in (128, 256, 512)),
        max_attempts=4,
        max_seconds=120,
    )
    request = engine.request_run("lo", [], workers="0,1", loop=plan, time_limit_s=30)
    approval = person.approve(engine, request.id)
    # simulate a runner that used the approval, started attempt 1 and died
    from tpu_runtime.remote import approvals as ap

    ap.consume(engine.store, approval, "crashed-runner", engine.clock(), engine.trust())
    loops.open_loop(engine.store, request.id, approval.id, plan, engine.clock())
    assert loops.begin_attempt(engine.store, request.id, plan, engine.clock()) == (1, 0)

    async def resume() -> tuple[RunResult, list[RunEvent]]:
        try:
            run_id = await engine.resume_loop(request.id)
            events = [e async for e in engine.stream(run_id)]
            return await engine.wait(run_id), events
        finally:
            await engine.aclose()

    result, events = asyncio.run(resume())
    assert result.state == "succeeded"
    texts = sorted({e.text for e in events if isinstance(e, OutputLine)})
    assert texts == ["block=128 attempt=2", "block=256 attempt=3", "block=512 attempt=4"]
    progress = loops.progress(engine.store, request.id, plan)
    assert progress is not None and [a.state for a in progress.attempts] == ["interrupted", "ok", "ok", "ok"]
    with engine.store.read() as conn:
        kinds = [r.kind for r in audit.rows(conn)]
    assert kinds.count("attempt_start") == 4 and "attempt_interrupted" in kinds and "resume" in kinds
    plain = engine.request_run("lo", ["true"], workers="0")
    with pytest.raises(ApprovalError, match="not a started loop"):
        asyncio.run(engine.resume_loop(plain.id))


def test_run_cli_streams_prefixed_output_for_a_policy_approved_command(
    farm: SshdFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from tpu_runtime.cli.app import app

    logs = farm.session / "cli-logs"
    logs.mkdir(exist_ok=True)
    (logs / "a.log").write_text("alpha\n")
    farm.chown(logs)
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    (tmp_path / "policy.yaml").write_text(
        yaml.safe_dump({"read_only": {"enabled": True, "log_dirs": [str(logs)]}})
    )
    keys = person.share_key(person.farm_key_dir(farm.session), tmp_path)
    sign_policy(tmp_path / "policy.yaml", person.unlocked(keys))
    runner = CliRunner()
    done = runner.invoke(app, ["run", "--target", "lo", "--", "cat", str(logs / "a.log")])
    assert done.exit_code == 0, done.output
    assert sorted(line for line in done.stdout.splitlines() if line.startswith("[")) == [
        f"[{i}:w{i}] alpha" for i in range(WORKERS)
    ]
    pending = runner.invoke(app, ["run", "--target", "lo", "--json", "--", "sh", "-c", "echo hi"])
    assert pending.exit_code == 3
    request_id = [line for line in pending.stdout.splitlines() if '"pending"' in line]
    assert request_id, pending.output
    checked = runner.invoke(app, ["targets", "check", "lo", "--json"])
    assert checked.exit_code == 0, checked.output
    assert '"ok": true' in checked.stdout and checked.stdout.count('"ok": true') == WORKERS
    shlex.split(done.stdout)  # output is plain text, no control codes


def test_run_cli_waits_for_an_approval_given_in_another_terminal(
    farm: SshdFarm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from typer.testing import CliRunner, Result

    from tpu_runtime.cli.app import app

    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    person.share_key(person.farm_key_dir(farm.session), tmp_path)
    outcome: list[Result] = []
    waiting = threading.Thread(
        target=lambda: outcome.append(
            CliRunner().invoke(
                app, ["run", "-t", "lo", "--worker", "0,3", "--wait", "30", "--", "echo", "waited"]
            )
        )
    )
    waiting.start()
    engine = RemoteEngine()  # the person's terminal: same state file, another process in real life
    deadline = time.monotonic() + 60
    while not engine.list_requests(("pending",)) and waiting.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    pending = engine.list_requests(("pending",))
    assert len(pending) == 1, outcome[0].output if outcome else f"no request filed in 60 s: {pending}"
    (request,) = pending
    assert [w.index for w in request.spec.workers] == [0, 3]
    person.approve(engine, request.id, via="approvals-cli")
    waiting.join(timeout=30)
    assert outcome and outcome[0].exit_code == 0, outcome[0].output if outcome else "no result"
    assert sorted(line for line in outcome[0].stdout.splitlines() if line.startswith("[")) == [
        "[0:w0] waited",
        "[3:w3] waited",
    ]
