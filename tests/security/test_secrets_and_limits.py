"""Attacks 1, 6 and 7: an upload swapped after the check, secrets in views, files and `ps`, an oversized
request, and read-only commands aimed at a FIFO or through a symlink."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.sshd import SshdFarm
from tests.security.conftest import make_engine, run
from tpu_runtime.remote.approvals import ApprovalError
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.report import OutputLine
from tpu_runtime.remote.spec import SpecError

TOKEN = "hf_" + "Q7x" * 12


def test_an_upload_swapped_after_the_check_is_not_what_runs(engine: RemoteEngine, tmp_path: Path) -> None:
    upload = tmp_path / "train.py"
    upload.write_text("print('approved')\n")
    request = engine.request_run("lo", ["python3", "train.py"], uploads=[(upload, None)], workers="0")
    approval = person.approve(engine, request.id)

    async def go() -> tuple[str, list[str]]:
        try:
            run_id = await engine.start(approval)  # hashed and copied: the window SFTP used to leave
            upload.write_text("print('swapped')\n")
            lines = [e.text async for e in engine.stream(run_id) if isinstance(e, OutputLine)]
            return (await engine.wait(run_id)).state, lines
        finally:
            await engine.aclose()

    state, lines = asyncio.run(go())
    assert state == "succeeded" and lines == ["approved"]
    # swapped before the run starts: refused, audited, nothing sent
    again = engine.request_run("lo", ["python3", "train.py"], uploads=[(upload, None)], workers="0")
    approved = person.approve(engine, again.id)
    upload.write_text("print('swapped again')\n")
    with pytest.raises(ApprovalError, match="changed after it was approved"):
        run(engine, approved)
    # replaced by a FIFO (which would block a reader): refused at once
    fourth = engine.request_run("lo", ["true"], uploads=[(upload, None)], workers="0")
    fifo_approval = person.approve(engine, fourth.id)
    upload.unlink()
    os.mkfifo(upload)
    with pytest.raises(ApprovalError, match="no longer a regular file"):
        run(engine, fifo_approval)


def test_the_worker_gate_checks_upload_bytes(engine: RemoteEngine, farm: SshdFarm, tmp_path: Path) -> None:
    """Bytes that differ on the worker when the command is about to start are refused by the gate (the
    gate's own code, run here on the bundle the executor would send)."""
    from tpu_runtime.remote import approvals as ap
    from tpu_runtime.remote import worker_gate
    from tpu_runtime.remote.snapshot import UploadSnapshot
    from tpu_runtime.remote.ssh_exec import GateInputs, gate_bundle

    upload = tmp_path / "data.txt"
    upload.write_text("approved bytes\n")
    request = engine.request_run("lo", ["cat", "data.txt"], uploads=[(upload, None)], workers="1")
    approval = ap.get_approval(engine.store, person.approve(engine, request.id).id)
    files = Path(request.spec.remote_dir) / "runs" / request.id / "files"
    files.mkdir(parents=True)
    (files / "data.txt").write_text("evil\n")
    key = engine.approver_key()
    assert key is not None
    inputs = GateInputs(approval, key.public_line, {}, UploadSnapshot(), lambda: {"seq": 1, "hash": "0" * 64})
    worker = request.spec.workers[0]
    bundle = json.loads(
        gate_bundle(request.spec, request.id, "run-x", worker, 0, request.spec.command, inputs)
    )
    gate = tmp_path / "gate"
    gate.mkdir()
    with pytest.raises(worker_gate.Refused, match="not the approved bytes"):
        worker_gate.check(bundle, str(gate), time.time())
    (files / "data.txt").write_text("approved bytes\n")
    worker_gate.check(bundle, str(gate), time.time())  # the approved bytes pass


def test_secrets_go_by_name_and_never_show(
    home: Path, farm: SshdFarm, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    engine = make_engine(home)
    with pytest.raises(SpecError, match="--secret-env HF_TOKEN"):
        engine.request_run("lo", ["true"], env={"HF_TOKEN": TOKEN})
    hunt = f"marker-{uuid.uuid4().hex}"
    command = [
        "sh",
        "-c",
        f'sleep 2; echo "{hunt} ${{#HF_TOKEN}} $(printf %s "$HF_TOKEN" | sha256sum | cut -c1-8)"',
    ]
    request = engine.request_run("lo", command, secret_env=["HF_TOKEN"], workers="0")
    approval = person.approve(engine, request.id)
    seen_in_argv: list[str] = []

    async def go() -> list[str]:
        try:
            run_id = await engine.start(approval)
            await asyncio.sleep(1.0)
            for entry in Path("/proc").iterdir():  # `ps` on the worker (it is this machine)
                if entry.name.isdigit():
                    try:
                        args = (entry / "cmdline").read_bytes()
                    except OSError:
                        continue
                    if TOKEN.encode() in args:
                        seen_in_argv.append(args.decode(errors="replace")[:80])
            return [e.text async for e in engine.stream(run_id) if isinstance(e, OutputLine)]
        finally:
            await engine.aclose()

    import hashlib

    lines = asyncio.run(go())
    assert seen_in_argv == []
    assert lines == [f"{hunt} {len(TOKEN)} {hashlib.sha256(TOKEN.encode()).hexdigest()[:8]}"]
    # not in the state file, its WAL, the run logs, or any view
    for path in home.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    from typer.testing import CliRunner

    from mcp_servers.remote_runs import request_view
    from tpu_runtime.cli.app import app

    shown = CliRunner().invoke(app, ["approvals", "show", request.id]).output
    shown_json = CliRunner().invoke(app, ["approvals", "show", request.id, "--json"]).output
    assert "HF_TOKEN" in shown and TOKEN not in shown and TOKEN not in shown_json
    assert TOKEN not in request_view(engine.get_request(request.id)).model_dump_json()
    # private files: folder 0700, state file 0600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "state.db").stat().st_mode) == 0o600
    # a different value at run time than the one approved: refused
    again = engine.request_run("lo", ["true"], secret_env=["HF_TOKEN"], workers="0")
    approval = person.approve(engine, again.id)
    monkeypatch.setenv("HF_TOKEN", "hf_other")
    with pytest.raises(ApprovalError, match="not the value approved"):
        run(make_engine(home), approval)


def test_an_oversized_request_is_refused_before_it_is_stored(engine: RemoteEngine, home: Path) -> None:
    engine.request_run("lo", ["true"])
    before = sum(p.stat().st_size for p in home.glob("state.db*"))
    with pytest.raises(SpecError, match="over the 256 KiB limit"):
        engine.request_run("lo", ["echo", "x" * 5_000_000])
    after = sum(p.stat().st_size for p in home.glob("state.db*"))
    assert after - before < 100_000


def test_read_only_rules_refuse_fifos_and_symlinks_on_the_worker(home: Path, farm: SshdFarm) -> None:
    logs = farm.session / f"ro-logs-{uuid.uuid4().hex[:6]}"
    logs.mkdir()
    (logs / "ok.log").write_text("fine\n")
    os.mkfifo(logs / "pipe.log")
    (logs / "escape.log").symlink_to("/etc/hostname")
    for path in (logs, logs / "ok.log", logs / "pipe.log", logs / "escape.log"):
        farm.chown(path)
    (home / "policy.yaml").write_text(
        yaml.safe_dump({"read_only": {"enabled": True, "log_dirs": [str(logs)]}})
    )
    person.sign_policy(make_engine(home))
    for name, expect in (("ok.log", None), ("pipe.log", "not a regular file"), ("escape.log", "outside")):
        engine = make_engine(home)
        request = engine.request_run("lo", ["cat", str(logs / name)], workers="0", time_limit_s=60)
        assert request.state == "approved"  # the text passes the rule; the worker checks what it is
        approval = engine.approval_for(request.id)
        assert approval is not None
        began = time.monotonic()
        result, lines = run(engine, approval)
        if expect is None:
            assert result.ok and [line.text for line in lines] == ["fine"]
        else:
            assert result.workers[0].error_kind == "gate" and expect in str(result.workers[0].error)
            assert time.monotonic() - began < 30  # refused at once, not blocked until the time limit
