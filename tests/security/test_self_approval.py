"""Attacks 3 and 4: approving from the agent's own shell (a fake terminal, Python's pty, its own MCP
client answering its own dialog, an edited policy file). Only the passphrase approves."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from mcp.client import Client

from tests.conftest import REPO
from tests.remote_support import person
from tests.remote_support.pty_person import PtySession
from tests.remote_support.sshd import SshdFarm
from tpu_runtime.remote.engine import RemoteEngine

CLI = [sys.executable, "-m", "tpu_runtime.cli.app"]


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "TPU_AGENT_HOME": str(home), "COLUMNS": "200"}


def test_a_fake_terminal_types_yes_but_not_the_passphrase(engine: RemoteEngine, home: Path) -> None:
    request = engine.request_run("lo", ["true"], workers="0")
    term = PtySession([*CLI, "approvals", "approve", request.id], _env(home), REPO)
    try:
        term.expect(b"Type yes")
        term.send(b"yes\n")
        term.expect(b"Passphrase for approver key")
        term.send(b"yes\n")  # a guess
        assert term.finish() == 4
    finally:
        term.close()
    assert b"wrong passphrase" in term.seen
    assert engine.get_request(request.id).state == "pending" and engine.approval_for(request.id) is None


@pytest.mark.slow
def test_script_and_python_pty_from_a_shell_without_a_terminal(engine: RemoteEngine, home: Path) -> None:
    """What the agent's shell tool does: no terminal of its own, so it makes one and pipes answers in."""
    for wrapper in (
        ["script", "-qec", " ".join([*CLI, "approvals", "approve", "{id}"]), "/dev/null"],
        [
            sys.executable,
            "-c",
            "import pty, sys; pty.spawn(sys.argv[1:])",
            *CLI,
            "approvals",
            "approve",
            "{id}",
        ],
    ):
        request = engine.request_run("lo", ["true"], workers="0")
        argv = [w.replace("{id}", request.id) for w in wrapper]
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=_env(home),
            cwd=REPO,
            start_new_session=True,  # no controlling terminal, like a tool's subprocess
        )
        assert proc.stdin is not None
        time.sleep(3)  # let it show the request and ask
        proc.stdin.write(b"yes\n")
        proc.stdin.flush()
        time.sleep(2)
        proc.stdin.write(b"password123\n")
        proc.stdin.flush()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        assert engine.approval_for(request.id) is None, out.decode(errors="replace")
        assert engine.get_request(request.id).state == "pending"


def test_replacing_the_key_needs_the_old_passphrase(home: Path) -> None:
    before = (home / "approver" / "approver.key").read_bytes()
    term = PtySession([*CLI, "approver", "init", "--replace"], _env(home), REPO)
    try:
        term.expect(b"Passphrase for approver key")
        term.send(b"not the passphrase\n")
        assert term.finish() == 2
    finally:
        term.close()
    assert (home / "approver" / "approver.key").read_bytes() == before


def _policy(home: Path, data: dict[str, object], signed: bool) -> None:
    (home / "policy.yaml").write_text(yaml.safe_dump(data))
    if signed:
        person.sign_policy(_fresh(home))


def _fresh(home: Path) -> RemoteEngine:
    from tests.security.conftest import make_engine

    return make_engine(home)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_mcp_client_answering_its_own_dialog_runs_nothing(
    home: Path, farm: SshdFarm, anyio_backend: str
) -> None:
    from mcp.client.context import ClientRequestContext
    from mcp_types import ElicitRequestParams, ElicitResult

    from mcp_servers.remote_runs import build_server

    marker = farm.session / f"marker-mcp-{os.getpid()}-{time.monotonic_ns()}"

    async def agent_says_yes(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        digest = str(params.message).split("Digest: sha256:")[1][:12]
        return ElicitResult(action="accept", content={"digest": digest})

    argv = ["sh", "-c", f"echo ran >> {marker}"]
    # the default policy, and a policy file the agent edited to allow dialogs but could not sign
    for policy, signed in (({}, False), ({"approvals": {"elicitation": True}}, False)):
        _policy(home, policy, signed)
        engine = _fresh(home)
        try:
            async with Client(build_server(engine), elicitation_callback=agent_says_yes) as client:
                filed = await client.call_tool("request_run", {"target": "lo", "argv": argv, "workers": "0"})
                request_id = filed.structured_content["request_id"]
                answer = (await client.call_tool("run", {"request_id": request_id})).structured_content
        finally:
            await engine.aclose()
        assert answer["status"] == "awaiting_approval", answer
        assert "approvals approve" in answer["message"] and "own terminal" in answer["message"]
        assert engine.get_request(request_id).state == "pending"
    assert not marker.exists()
    # once the person signs a policy that allows dialogs, the same client's answer counts: documented
    _policy(home, {"approvals": {"elicitation": True}}, signed=True)
    engine = _fresh(home)
    try:
        async with Client(build_server(engine), elicitation_callback=agent_says_yes) as client:
            filed = await client.call_tool("request_run", {"target": "lo", "argv": argv, "workers": "0"})
            ran = (
                await client.call_tool("run", {"request_id": filed.structured_content["request_id"]})
            ).structured_content
    finally:
        await engine.aclose()
    assert ran["status"] == "succeeded" and marker.read_text() == "ran\n"


def test_an_edited_policy_file_approves_nothing(home: Path, farm: SshdFarm) -> None:
    logs = farm.session / "sec-logs"
    logs.mkdir(exist_ok=True)
    (logs / "a.log").write_text("x\n")
    farm.chown(logs)
    _policy(home, {"read_only": {"enabled": True, "log_dirs": ["/"]}}, signed=False)
    engine = _fresh(home)
    request = engine.request_run("lo", ["cat", "/etc/hostname"], workers="0")
    assert request.state == "pending" and engine.approval_for(request.id) is None
    assert engine.policy().note is not None and "not signed" in engine.policy().note
    _policy(home, {"read_only": {"enabled": True, "log_dirs": [str(logs)]}}, signed=True)
    signed = _fresh(home).request_run("lo", ["cat", str(logs / "a.log")], workers="0")
    assert signed.state == "approved"
    # one byte changed after signing: back to the default
    (home / "policy.yaml").write_text(yaml.safe_dump({"read_only": {"enabled": True, "log_dirs": ["/"]}}))
    again = _fresh(home).request_run("lo", ["cat", "/etc/hostname"], workers="0")
    assert again.state == "pending"
