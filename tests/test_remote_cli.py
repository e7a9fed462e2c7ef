"""The `targets`, `approvals` and `audit` commands, and that only a terminal can approve (no SSH needed)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.remote_support.engine import HOST_KEY, LAB_WORKER, write_lab_target
from tests.remote_support.person import PASSPHRASE, make_key
from tests.remote_support.pty_person import PtySession
from tpu_runtime.cli.app import app
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.targets import TARGETS_EXAMPLE


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    return write_lab_target(
        tmp_path, [LAB_WORKER, {"name": "w1", "host": "10.0.0.3", "port": 2222, "host_key": HOST_KEY}]
    )


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_targets_list_and_show(home: Path) -> None:
    code, out, _ = _invoke("targets", "list", "--json")
    assert code == 0 and json.loads(out)["lab"]["kind"] == "hosts"
    code, out, _ = _invoke("targets", "show", "lab", "--json")
    workers = json.loads(out)["workers"]
    assert [(w["host"], w["port"], w["user"]) for w in workers] == [
        ("10.0.0.2", 22, "alice"),
        ("10.0.0.3", 2222, "alice"),
    ]
    code, _, err = _invoke("targets", "show", "nope")
    assert code == 2 and "no target named 'nope'" in err and "known: lab" in err


def test_the_documented_targets_file_loads_and_is_in_the_help(home: Path) -> None:
    """`targets --help` and the README show the same example, and it is a valid targets file."""
    (home / "targets.yaml").write_text(TARGETS_EXAMPLE)
    code, out, _ = _invoke("targets", "list", "--json")
    kinds = {name: entry["kind"] for name, entry in json.loads(out).items()}
    assert code == 0 and kinds == {
        "my-v6e": "tpu-vm",
        "my-qr": "tpu-vm",
        "lab": "hosts",
        "cluster": "gke",
        "my-ray": "ray",
    }
    assert json.loads(out)["my-qr"]["queued_resource"] == "my-queued-resource"
    code, out, _ = _invoke("targets", "--help")
    assert code == 0 and all(f"kind: {kind}" in out for kind in ("tpu-vm", "hosts", "gke", "ray"))
    assert "queued_resource:" in out
    readme = (REPO / "README.md").read_text()
    assert TARGETS_EXAMPLE.strip() in readme


def test_bad_targets_file_gives_one_line(home: Path) -> None:
    (home / "targets.yaml").write_text(
        "targets:\n  x: {kind: hosts, hosts: [{name: a, host: h, prot: 22}]}\n"
    )
    code, _, err = _invoke("targets", "list")
    assert code == 2 and "targets.x.hosts.hosts.0.prot" in err.replace("\n", "")


def test_run_without_a_terminal_leaves_the_request_pending(home: Path) -> None:
    code, out, err = _invoke("run", "--target", "lab", "--json", "--", "python", "train.py")
    assert code == 3
    pending = json.loads(out.splitlines()[0])
    assert pending["type"] == "pending" and pending["request"]["state"] == "pending"
    assert "tpu-agent approvals approve" in err
    code, _, err = _invoke("run", "--target", "lab", "--", "echo")
    assert code == 3
    code, _, err = _invoke("run", "--", "echo")
    assert code == 2 and "--target is required" in err
    code, _, err = _invoke("run", "--target", "lab", "--worker", "5", "--", "echo")
    assert code == 2 and "indexes from 0 to 1" in err


def test_approvals_list_show_deny_and_no_approval_without_a_terminal(home: Path) -> None:
    engine = RemoteEngine()
    request = engine.request_run("lab", ["python", "train.py", "--steps", "10"])
    code, out, _ = _invoke("approvals", "list", "--json")
    assert [r["id"] for r in json.loads(out)] == [request.id]
    code, out, _ = _invoke("approvals", "show", request.id)
    assert code == 0 and "python train.py --steps 10" in out and request.digest[:20] in out.replace("\n", "")
    code, _, err = _invoke("approvals", "approve", request.id)
    assert code == 4 and "needs your terminal" in err
    assert engine.get_request(request.id).state == "pending"
    code, _, _ = _invoke("approvals", "deny", request.id, "--reason", "wrong model")
    assert code == 0 and engine.get_request(request.id).state == "denied"
    code, _, err = _invoke("approvals", "deny", request.id)
    assert code == 2 and "denied, not pending" in err


def test_audit_show_and_verify_detects_tampering(home: Path) -> None:
    engine = RemoteEngine()
    request = engine.request_run("lab", ["echo", "1"])
    engine.deny(request.id, "alice@tty", "no")
    code, out, _ = _invoke("audit", "show", "--json")
    assert [r["kind"] for r in json.loads(out)] == ["request", "denied"]
    code, out, _ = _invoke("audit", "verify", "--json")
    assert code == 0 and json.loads(out)["ok"] is True
    with sqlite3.connect(home / "state.db") as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("UPDATE audit SET payload = replace(payload, 'echo', 'rm') WHERE seq = 1")
    code, _, err = _invoke("audit", "verify")
    assert code == 1 and "row 1: contents do not match its hash" in err


def test_the_person_approves_at_a_real_terminal(home: Path) -> None:
    engine = RemoteEngine()
    make_key(engine.approver_path)
    request = engine.request_run("lab", ["python", "train.py"])
    env = {**os.environ, "TPU_AGENT_HOME": str(home), "COLUMNS": "200"}
    term = PtySession(
        [sys.executable, "-m", "tpu_runtime.cli.app", "approvals", "approve", request.id], env, REPO
    )
    try:
        seen = term.expect(b"Type yes")
        assert b"python train.py" in seen and request.id.encode() in seen
        term.send(b"yes\n")
        term.expect(b"Passphrase for approver key")
        term.send(PASSPHRASE.encode() + b"\n")
        assert term.finish() == 0, term.seen.decode(errors="replace")
    finally:
        term.close()
    assert PASSPHRASE.encode() not in term.seen  # typed with echo off
    approval = engine.approval_for(request.id)
    assert approval is not None and approval.digest == request.digest and approval.via == "approvals-cli"
    assert approval.signature is not None and approval.statement is not None
