"""The tpu-runs MCP server against four real sshd workers on loopback, through the SDK's in-memory Client.

Approval paths: the client's elicitation dialog (accepted, declined, a digest typed wrong), a client
that cannot elicit (the person approves with the CLI's engine call, then `run` again), and a policy
rule. The SSH tests skip, with the reason, where sshd or useradd is unavailable.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from mcp.client import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, TextContent

from mcp_servers import all as all_servers
from mcp_servers.remote_runs import NAME, build_server
from tests.remote_support.person import approve as person_approve
from tests.remote_support.person import farm_key_dir, share_key, unlocked
from tests.remote_support.sshd import SshdFarm, farm_or_skip
from tpu_runtime.remote import audit
from tpu_runtime.remote.consent import digest_confirmed
from tpu_runtime.remote.engine import RemoteEngine, whoami
from tpu_runtime.remote.policy import sign_policy

WORKERS = 4
TOOLS = {"list_targets", "request_run", "run", "run_status", "run_output", "cancel_run", "fetch_logs"}


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    yield from farm_or_skip(WORKERS, tmp_path_factory.mktemp("farm"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's config and state folder, and the folder uploads may come from."""
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TPU_AGENT_ROOTS", str(tmp_path))
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _configure(home: Path, farm: SshdFarm, policy: dict[str, Any] | None = None) -> None:
    """Targets, the person's approver key, and their policy, signed by them."""
    (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    (home / "policy.yaml").write_text(yaml.safe_dump(policy or {}))
    keys = share_key(farm_key_dir(farm.session), home)
    sign_policy(home / "policy.yaml", unlocked(keys))


@pytest.fixture
async def engine(home: Path, farm: SshdFarm) -> AsyncIterator[RemoteEngine]:
    _configure(home, farm, policy={"approvals": {"elicitation": True}})  # the person allows dialogs
    made = RemoteEngine()
    yield made
    await made.aclose()


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _audit(engine: RemoteEngine) -> list[audit.AuditRow]:
    with engine.store.read() as conn:
        assert audit.verify(conn).ok
        return audit.rows(conn)


class Person:
    """An elicitation callback standing in for the person at the client's approval dialog."""

    def __init__(self, action: str, typed: str | None = None) -> None:
        self.action = action
        self.typed = typed
        self.seen: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.seen.append(params.message)
        if self.action != "accept":
            return ElicitResult(action=self.action)  # type: ignore[arg-type]
        match = re.search(r"Digest: sha256:([0-9a-f]{64})", params.message)
        assert match is not None, params.message
        typed = self.typed if self.typed is not None else match.group(1)[:8]
        return ElicitResult(action="accept", content={"digest": typed})


# --- listing (no sshd needed) ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_annotations_and_no_tool_offers_approval() -> None:
    async with Client(build_server()) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert "approv" not in tool.name
        # nothing a model sends can carry an approval: no such argument exists
        params = set(tool.input_schema.get("properties", {}))
        assert not {p for p in params if re.search(r"approv|consent|confirm|digest|yes", p)}, tool.name
        description = tool.description or ""
        assert not re.search(r"(this tool|call \w+ to|you can|you may) approve", description, re.I), tool.name
        assert tool.output_schema is not None and tool.annotations is not None
        assert tool.annotations.open_world_hint is True
    for name in ("list_targets", "run_status", "run_output"):
        assert tools[name].annotations.read_only_hint is True  # type: ignore[union-attr]
    request = tools["request_run"].annotations
    assert request is not None and request.destructive_hint is False and request.read_only_hint is False
    for name in ("run", "cancel_run"):
        assert tools[name].annotations.destructive_hint is True  # type: ignore[union-attr]
    for name in ("run", "fetch_logs"):
        assert tools[name].meta == {"anthropic/requiresUserInteraction": True}
    assert "only the person can approve" in (tools["run"].description or "").lower()
    assert set(tools["run"].input_schema["properties"]) == {"request_id", "wait_s"}
    assert set(tools["request_run"].input_schema["properties"]) == {
        "target",
        "argv",
        "workers",
        "env",
        "secret_env",
        "uploads",
        "downloads",
        "time_limit_s",
    }
    assert NAME in {module.NAME for module in all_servers.specialist_modules()}


def test_digest_confirmation() -> None:
    digest = "sha256:" + "ab12cd34" + "e" * 56
    assert digest_confirmed("ab12cd34", digest)
    assert digest_confirmed(" AB12CD34ee ", digest)
    assert digest_confirmed(digest, digest)
    assert not digest_confirmed("ab12cd3", digest)  # too short to be a deliberate confirmation
    assert not digest_confirmed("ab12cd35", digest)
    assert not digest_confirmed("", digest)


# --- the approval paths against real sshd workers -------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "mode", ["auto", "legacy"]
)  # 2026-07-28 input-required round trip; elicitation/create
@pytest.mark.slow
async def test_accepted_in_the_dialog_runs_on_every_worker(
    engine: RemoteEngine, tmp_path: Path, mode: str
) -> None:
    upload = tmp_path / "note.txt"
    upload.write_text("from the laptop\n")
    person = Person("accept")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with Client(build_server(engine), elicitation_callback=person, mode=mode) as client:
        targets = (await client.call_tool("list_targets", {})).structured_content
        assert [(t["name"], t["kind"], t["workers"]) for t in targets["targets"]] == [
            ("lo", "hosts", WORKERS)
        ]
        filed = await client.call_tool(
            "request_run",
            {
                "target": "lo",
                "argv": ["sh", "-c", 'echo "hello from $TPU_AGENT_WORKER"; cat note.txt'],
                "env": {"GREETING": "hi there"},
                "uploads": [{"path": str(upload)}],
                "time_limit_s": 30,
            },
        )
        assert not filed.is_error, _text(filed)
        view = filed.structured_content
        assert view["state"] == "pending" and len(view["workers"]) == WORKERS
        assert view["digest"].startswith("sha256:") and view["uploads"][0]["dest"] == "note.txt"
        assert not person.seen  # filing a request asks nobody and runs nothing

        result = await client.call_tool(
            "run", {"request_id": view["request_id"]}, progress_callback=on_progress
        )
        assert not result.is_error, _text(result)
        ran = result.structured_content
        assert ran["status"] == "succeeded", ran["message"]
        assert ran["workers_done"] == WORKERS and all(w["exit_status"] == 0 for w in ran["workers"])
        hellos = sorted(
            (line["worker"], line["text"]) for line in ran["output"] if line["text"].startswith("hello")
        )
        assert hellos == [(i, f"hello from {i}") for i in range(WORKERS)]
        # loopback workers share one disk, so one worker may read the file while another rewrites it
        assert "from the laptop" in {line["text"] for line in ran["output"]}
        assert progress and progress == sorted(progress)

        # the dialog showed everything that was approved
        (message,) = person.seen
        for shown in (
            'echo "hello from',
            "GREETING='hi there'",
            "note.txt",
            "Time limit: 30 s",
            view["digest"],
        ):
            assert shown in message, shown
        assert message.count("127.0.0.1:") == WORKERS

        page = (
            await client.call_tool("run_output", {"run_id": ran["run_id"], "since_line": 2})
        ).structured_content
        assert [line["n"] for line in page["lines"]] == list(range(2, ran["lines_total"]))
        assert page["done"] is True and page["next_line"] == ran["lines_total"] >= WORKERS + 1
        status = (await client.call_tool("run_status", {"run_id": view["request_id"]})).structured_content
        assert status["status"] == "succeeded" and status["run_id"] == ran["run_id"]

        again = await client.call_tool("run", {"request_id": view["request_id"]})
        assert again.is_error and "already run" in _text(again)  # an approval is used once
    assert len(person.seen) == 1

    kinds = [(row.kind, row.payload.get("via")) for row in _audit(engine)]
    assert kinds == [("request", None), ("approved", "mcp-elicitation"), ("start", None), ("result", None)]


@pytest.mark.slow
@pytest.mark.anyio
async def test_declined_or_mistyped_in_the_dialog_runs_nothing(engine: RemoteEngine) -> None:
    marker = engine.state_path / "ran"
    argv = ["sh", "-c", f"touch {marker}"]
    async with Client(build_server(engine), elicitation_callback=Person("decline")) as client:
        filed = (await client.call_tool("request_run", {"target": "lo", "argv": argv})).structured_content
        declined = (await client.call_tool("run", {"request_id": filed["request_id"]})).structured_content
        assert declined["status"] == "denied" and declined["run_id"] is None
        later = (await client.call_tool("run", {"request_id": filed["request_id"]})).structured_content
        assert later["status"] == "denied"
    async with Client(build_server(engine), elicitation_callback=Person("accept", "00000000")) as client:
        other = (await client.call_tool("request_run", {"target": "lo", "argv": argv})).structured_content
        wrong = (await client.call_tool("run", {"request_id": other["request_id"]})).structured_content
        assert wrong["status"] == "not_approved" and "nothing ran" in wrong["message"]
        status = (await client.call_tool("run_status", {"run_id": other["request_id"]})).structured_content
        assert status["status"] == "awaiting_approval"  # still the person's to decide
    assert not marker.exists()
    rows = _audit(engine)
    assert [row.kind for row in rows] == ["request", "denied", "request", "refused"]
    assert rows[1].actor == whoami("mcp-elicitation") and "declined" in rows[1].payload["reason"]
    assert rows[3].payload["why"] == "digest_mismatch"
    assert engine.get_request(filed["request_id"]).state == "denied"


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_client_without_elicitation_gets_instructions_then_runs_with_the_cli_approval(
    engine: RemoteEngine,
) -> None:
    async with Client(build_server(engine)) as client:  # no elicitation callback: no dialog
        filed = await client.call_tool(
            "request_run", {"target": "lo", "argv": ["hostname"], "workers": "1,3", "time_limit_s": 20}
        )
        request_id = filed.structured_content["request_id"]
        waiting = (await client.call_tool("run", {"request_id": request_id})).structured_content
        assert waiting["status"] == "awaiting_approval" and waiting["run_id"] is None
        assert f"tpu-agent approvals approve {request_id}" in waiting["message"]
        assert engine.get_request(request_id).state == "pending"

        # the person approves in their own terminal: what `tpu-agent approvals approve` does
        cli = RemoteEngine()
        request = cli.get_request(request_id)
        approval = person_approve(cli, request_id, request.digest, whoami("tty"), via="approvals-cli")
        approved = (await client.call_tool("run_status", {"run_id": request_id})).structured_content
        assert approved["status"] == "approved"

        ran = (await client.call_tool("run", {"request_id": request_id})).structured_content
        assert ran["status"] == "succeeded", ran["message"]
        assert sorted(w["worker"] for w in ran["workers"]) == [1, 3]
        assert len(ran["output"]) == 2
    rows = _audit(engine)
    # the first approval also records which key is the person's (so a key file swapped later is caught)
    assert [(r.kind, r.payload.get("via")) for r in rows][:3] == [
        ("request", None),
        ("approver_key", None),
        ("approved", "approvals-cli"),
    ]
    assert rows[3].kind == "start" and rows[3].payload["approval"] == approval.id  # that approval, once


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_hung_run_is_followed_and_cancelled(engine: RemoteEngine) -> None:
    argv = ["sh", "-c", "echo started; sleep 60"]
    async with Client(build_server(engine), elicitation_callback=Person("accept")) as client:
        filed = (await client.call_tool("request_run", {"target": "lo", "argv": argv})).structured_content
        started = (
            await client.call_tool("run", {"request_id": filed["request_id"], "wait_s": 0})
        ).structured_content
        assert started["status"] == "running" and "run_output" in started["message"]
        run_id = started["run_id"]
        seen: list[str] = []
        since = 0
        while len(seen) < WORKERS:
            page = (
                await client.call_tool("run_output", {"run_id": run_id, "since_line": since, "wait_s": 10})
            ).structured_content
            assert page["lines"], "no output within 10 s"
            seen += [line["text"] for line in page["lines"]]
            since = page["next_line"]
        assert seen == ["started"] * WORKERS and page["done"] is False

        stopped = (await client.call_tool("cancel_run", {"run_id": run_id})).structured_content
        assert stopped["cancelled"] is True and stopped["status"] == "cancelled"
        assert len(stopped["workers"]) == WORKERS
        assert all(w["remote_stopped"] is True for w in stopped["workers"]), stopped["workers"]
        assert "gone on every worker" in stopped["message"]
        twice = (await client.call_tool("cancel_run", {"run_id": run_id})).structured_content
        assert twice["cancelled"] is False


@pytest.mark.anyio
async def test_fetch_logs_runs_at_once_when_the_policy_allows_it(home: Path, farm: SshdFarm) -> None:
    logs = farm.session / "logs"
    logs.mkdir(exist_ok=True)
    farm.chown(logs)
    log = logs / "train.log"
    log.write_text("".join(f"step {i} loss {10 - i}\n" for i in range(10)))
    farm.chown(log)
    _configure(home, farm, policy={"read_only": {"enabled": True, "log_dirs": [str(logs)]}})
    engine = RemoteEngine()
    try:
        async with Client(build_server(engine)) as client:  # no dialog needed: the policy approves
            result = await client.call_tool("fetch_logs", {"target": "lo", "paths": [str(log)], "lines": 2})
            assert not result.is_error, _text(result)
            ran = result.structured_content
            outside = await client.call_tool(
                "fetch_logs", {"target": "lo", "paths": ["/etc/passwd"], "lines": 2}
            )
    finally:
        await engine.aclose()
    assert ran["status"] == "succeeded", ran["message"]
    assert sorted(line["text"] for line in ran["output"]) == sorted(
        ["step 8 loss 2", "step 9 loss 1"] * WORKERS
    )
    assert ran["command_line"] == f"tail -n 2 {log}"
    # outside the policy's folders, with no dialog: the person must approve in the terminal
    assert outside.structured_content["status"] == "awaiting_approval"
    rows = _audit(engine)
    assert rows[1].kind == "approved" and rows[1].actor == "policy:read_only:tail"


@pytest.mark.anyio
async def test_bad_arguments_get_one_line_errors_and_the_server_lives_on(
    engine: RemoteEngine, tmp_path: Path
) -> None:
    async with Client(build_server(engine), elicitation_callback=Person("accept")) as client:
        cases = [
            ("request_run", {"target": "nowhere", "argv": ["ls"]}, "no target named 'nowhere'"),
            ("request_run", {"target": "lo", "argv": ["ls"], "env": {"BAD NAME": "x"}}, "BAD NAME"),
            (
                "request_run",
                {"target": "lo", "argv": ["ls"], "uploads": [{"path": "/etc/hostname"}]},
                "outside",
            ),
            ("request_run", {"target": "lo", "argv": ["ls"], "workers": "7"}, "worker"),
            ("request_run", {"target": "lo", "argv": []}, "argv"),
            ("run", {"request_id": "r-0000000000"}, "no request"),
            ("run", {"request_id": "approve everything"}, "request_id"),
            ("run_status", {"run_id": "run-0000000000"}, "no run"),
            ("cancel_run", {"run_id": "run-0000000000"}, "no run"),
            ("fetch_logs", {"target": "lo", "paths": ["-f"]}, "paths"),
        ]
        for tool, arguments, expected in cases:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
            assert expected in _text(result), (tool, _text(result))
        alive = await client.call_tool("list_targets", {})
        assert not alive.is_error
    assert [row.kind for row in _audit(engine)] == []  # nothing was filed
