"""LLM mode with the real `anthropic` SDK against a local server that speaks the Messages API.

The server (`FakeMessagesApi`) answers each POST /v1/messages with the next scripted reply and records
every request, so the tests see exactly what the SDK sent: which tools each agent was offered, the
tool results, the retries. Tools run for real through in-memory MCP clients on the specialists' servers.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Annotated, Any

import anyio
import pytest
from anthropic import AsyncAnthropic
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

from mcp_servers.all import specialist_modules
from tests.conftest import REPO
from tests.subprocess_support import run_text
from tpu_runtime.agent_defs import AgentDef, load_agents
from tpu_runtime.llm_agent import (
    DELEGATE,
    LlmAgent,
    LlmAnswer,
    LlmError,
    McpBackend,
    ToolBackend,
    playbooks_for,
)

OP_STATUS = "mcp__tpu-onboarding__op_status"
SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
Reply = tuple[int, dict[str, str], dict[str, Any]]


def message(content: list[dict[str, Any]], stop_reason: str) -> Reply:
    body = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    return 200, {}, body


def text(answer: str) -> Reply:
    return message([{"type": "text", "text": answer}], "end_turn")


def tool_use(name: str, arguments: dict[str, Any], use_id: str = "toolu_1", say: str = "") -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": say}] if say else []
    content.append({"type": "tool_use", "id": use_id, "name": name, "input": arguments})
    return message(content, "tool_use")


def delegate(agent: str, task: str) -> Reply:
    return tool_use(DELEGATE, {"agent": agent, "task": task}, use_id="toolu_route")


def api_error(status: int, kind: str, text_: str, headers: dict[str, str] | None = None) -> Reply:
    return status, headers or {}, {"type": "error", "error": {"type": kind, "message": text_}}


class FakeMessagesApi:
    """A loopback HTTP server: scripted replies in order, every request body kept."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with api.lock:
                    seen = {k.lower(): v for k, v in self.headers.items()}
                    api.requests.append({"path": self.path, "body": body, "headers": seen})
                    status, headers, payload = (
                        api.replies.pop(0) if api.replies else api_error(500, "api_error", "script ran out")
                    )
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]


@pytest.fixture
def api() -> Iterator[FakeMessagesApi]:
    fake = FakeMessagesApi()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


@pytest.fixture(scope="module")
def agents() -> dict[str, AgentDef]:
    return load_agents(REPO / "agents")


def specialist_servers() -> dict[str, Any]:
    return {module.NAME: module.build_server for module in specialist_modules()}


def client_for(api: FakeMessagesApi, retries: int = 2) -> AsyncAnthropic:
    return AsyncAnthropic(api_key="test-key", base_url=api.url, max_retries=retries, timeout=20)


async def ask(
    api: FakeMessagesApi,
    agents: dict[str, AgentDef],
    request: str,
    *,
    backend_servers: dict[str, Any] | None = None,
    max_turns: int = 12,
    confirm: Any = None,
    retries: int = 2,
) -> LlmAnswer:
    async with McpBackend(backend_servers or specialist_servers(), roots=[REPO]) as backend:
        agent = LlmAgent(
            client_for(api, retries),
            backend,
            agents,
            model="claude-test",
            max_turns=max_turns,
            confirm=confirm,
            playbooks=playbooks_for(agents),
        )
        return await agent.ask(request, hint="tpu-model-onboarding (test hint)")


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    assert last["role"] == "user" and isinstance(last["content"], list)
    return [block for block in last["content"] if block["type"] == "tool_result"]


# --- the happy path -----------------------------------------------------------------------------------


def test_router_delegates_and_the_specialist_calls_its_tool(
    api: FakeMessagesApi, agents: dict[str, AgentDef]
) -> None:
    api.script(
        delegate("tpu-model-onboarding", "Is aten::nansum supported by torch_tpu?"),
        tool_use(OP_STATUS, {"op": "aten::nansum"}, say="Looking it up."),
        text("aten::nansum is missing in torch_tpu; rewrite it with torch.where."),
        text("The onboarding specialist says: aten::nansum is missing; rewrite it with torch.where."),
    )
    answer = anyio.run(lambda: ask(api, agents, "Is aten::nansum supported?"))
    assert answer.stopped == "done" and answer.turns == 4
    assert answer.agents == ["tpu-model-onboarding"]
    assert answer.text.startswith("The onboarding specialist says")

    router_call, specialist_first, specialist_second, router_second = api.bodies()
    assert all(r["path"] == "/v1/messages" for r in api.requests)
    assert api.requests[0]["headers"]["x-api-key"] == "test-key"
    assert [t["name"] for t in router_call["tools"]] == [DELEGATE]  # the router runs nothing itself
    assert router_call["tools"][0]["input_schema"]["properties"]["agent"]["enum"][0] == "tpu-model-onboarding"
    assert "never runs commands" in router_call["system"] or "never run" in router_call["system"]
    assert "(The rule-based router suggests: tpu-model-onboarding" in router_call["messages"][0]["content"]

    offered = {t["name"] for t in specialist_first["tools"]}
    listed = {f"mcp__{server}__{tool}" for server, tool in agents["tpu-model-onboarding"].mcp_tools()}
    onboarding = {"mcp__tpu-onboarding__onboard_model", "mcp__tpu-onboarding__onboard_hf_config"}
    assert offered == listed == {OP_STATUS, *onboarding}
    assert specialist_first["system"].startswith(agents["tpu-model-onboarding"].body.strip()[:80])
    assert "workflows/onboard.yaml" in specialist_first["system"]
    assert "[runs only after the person approves it]" in specialist_first["system"]
    assert specialist_first["messages"][0]["content"] == "Is aten::nansum supported by torch_tpu?"

    (result,) = tool_results(specialist_second)
    assert result["tool_use_id"] == "toolu_1" and "is_error" not in result
    payload = json.loads(result["content"])
    assert payload["op"] == "aten::nansum" and payload["status"] == "missing"  # the real tool ran

    (delegated,) = tool_results(router_second)
    assert delegated["tool_use_id"] == "toolu_route"
    assert delegated["content"].startswith("aten::nansum is missing in torch_tpu")
    assert [e.kind for e in answer.events] == ["route", "delegate", "tool", "answer"]


# --- what the model may not do -------------------------------------------------------------------------


def test_tools_outside_the_allowlist_are_refused_and_reported(
    api: FakeMessagesApi, agents: dict[str, AgentDef]
) -> None:
    api.script(
        tool_use(OP_STATUS, {"op": "aten::mm"}, use_id="toolu_router_direct"),  # the router acting itself
        delegate("tpu-diagnostics", "why did it crash?"),
        tool_use(OP_STATUS, {"op": "aten::mm"}, use_id="toolu_a"),  # onboarding's tool, not diagnostics'
        tool_use("mcp__tpu-diagnostics__diagnose", {"paths": ["x.log"]}, use_id="toolu_b"),
        tool_use("Bash", {"command": "tpu-agent approvals approve r-1"}, use_id="toolu_c"),
        text("I could not run the diagnosis here."),
        text("Diagnostics could not run."),
    )
    answer = anyio.run(lambda: ask(api, agents, "why did it crash?"))
    assert answer.text == "Diagnostics could not run."
    bodies = api.bodies()
    (router_refused,) = tool_results(bodies[1])
    assert router_refused["is_error"] is True and "its only tool is delegate" in router_refused["content"]

    assert {t["name"] for t in bodies[2].get("tools", [])} <= set(agents["tpu-diagnostics"].tools)
    assert not any("plugin_" in t["name"] for t in bodies[2].get("tools", []))  # one spelling offered
    (not_allowed,) = tool_results(bodies[3])
    assert not_allowed["is_error"] is True
    assert f"refused: {OP_STATUS} is not on tpu-diagnostics's tool allowlist" in not_allowed["content"]
    (unavailable,) = tool_results(bodies[4])
    expected = "not available in this installation"
    if "mcp__tpu-diagnostics__diagnose" in {t["name"] for t in bodies[2].get("tools", [])}:
        expected = ""  # the diagnostics server has landed: the call reached it
    assert expected in unavailable["content"]
    (bash,) = tool_results(bodies[5])
    assert bash["is_error"] is True and "not on tpu-diagnostics's tool allowlist" in bash["content"]
    kinds = [(e.kind, e.detail.split(":")[0]) for e in answer.events]
    assert ("refused", OP_STATUS) in kinds and ("refused", "Bash") in kinds
    assert not any(e.kind == "tool" and e.detail.startswith(OP_STATUS) for e in answer.events)


def runs_server() -> MCPServer:
    """A stand-in for the planned tpu-runs server: one destructive tool and one that would approve."""
    server = MCPServer("tpu-runs")
    calls: list[str] = []

    @server.tool(
        name="request_run",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
    )
    def request_run(command: Annotated[str, Field(min_length=1)]) -> str:
        calls.append(command)
        return f"requested: {command}"

    @server.tool(name="approve_run", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    def approve_run(request_id: str) -> str:
        raise AssertionError("an approving tool must never be called")

    return server


@pytest.mark.slow
def test_no_tool_approves_and_destructive_tools_need_the_person(
    api: FakeMessagesApi, agents: dict[str, AgentDef]
) -> None:
    kernels = agents["tpu-kernel-development"]
    widened = dict(agents)
    widened["tpu-kernel-development"] = kernels.model_copy(
        update={"tools": [*kernels.tools, "mcp__plugin_tpu-agent_tpu-runs__approve_run"]}
    )
    servers = {**specialist_servers(), "tpu-runs": runs_server}
    asked: list[tuple[str, dict[str, Any]]] = []

    async def person_says(answer: bool) -> Any:
        async def confirm(tool: str, arguments: dict[str, Any]) -> bool:
            asked.append((tool, arguments))
            return answer

        return confirm

    def script() -> None:
        api.script(
            delegate("tpu-kernel-development", "autotune my kernel on the v6e"),
            tool_use("mcp__tpu-runs__approve_run", {"request_id": "r-1"}, use_id="toolu_approve"),
            tool_use("mcp__tpu-runs__request_run", {"command": "python tune.py"}, use_id="toolu_run"),
            text("done"),
            text("done"),
        )

    script()
    anyio.run(lambda: ask(api, widened, "tune", backend_servers=servers))  # no terminal: no confirm
    bodies = api.bodies()
    (approve,) = tool_results(bodies[2])
    assert approve["is_error"] is True and "Approval is the person's decision" in approve["content"]
    (run,) = tool_results(bodies[3])
    assert run["is_error"] is True and "the person did not approve" in run["content"]

    for answer_yes, expect in ((False, "did not approve"), (True, "requested: python tune.py")):
        api.requests.clear()
        script()

        async def go(yes: bool = answer_yes) -> LlmAnswer:
            return await ask(api, widened, "tune", backend_servers=servers, confirm=await person_says(yes))

        anyio.run(go)
        (run,) = tool_results(api.bodies()[3])
        assert expect in run["content"]
    assert [tool for tool, _ in asked] == ["mcp__tpu-runs__request_run"] * 2  # never asked to approve


def test_turn_limit_stops_a_loop(api: FakeMessagesApi, agents: dict[str, AgentDef]) -> None:
    api.script(
        delegate("tpu-model-onboarding", "check ops"),
        *[tool_use(OP_STATUS, {"op": "aten::mm"}, use_id=f"toolu_{i}") for i in range(10)],
    )
    answer = anyio.run(lambda: ask(api, agents, "loop forever", max_turns=3))
    assert answer.stopped == "turn_limit" and answer.turns == 3
    assert len(api.requests) == 3
    assert "limit of 3 model turns" in answer.text
    assert answer.events[-1].kind == "turn_limit"


# --- API errors ---------------------------------------------------------------------------------------


def test_rate_limit_is_retried_after_retry_after(api: FakeMessagesApi, agents: dict[str, AgentDef]) -> None:
    api.script(
        api_error(429, "rate_limit_error", "slow down", {"retry-after-ms": "20", "retry-after": "0"}),
        text("Hello from the router."),
    )
    answer = anyio.run(lambda: ask(api, agents, "hello"))
    assert answer.text == "Hello from the router." and answer.turns == 1
    assert len(api.requests) == 2  # the SDK retried the same call
    assert api.requests[1]["headers"].get("x-stainless-retry-count") == "1"
    assert api.bodies()[0] == api.bodies()[1]


def test_persistent_rate_limit_is_one_clear_error(api: FakeMessagesApi, agents: dict[str, AgentDef]) -> None:
    api.script(*[api_error(429, "rate_limit_error", "quota exceeded", {"retry-after-ms": "10"})] * 3)
    with pytest.raises(LlmError, match=r"HTTP 429 \(rate limited\) after 1 retries: quota exceeded"):
        anyio.run(lambda: ask(api, agents, "hello", retries=1))
    assert len(api.requests) == 2


def test_bad_request_is_not_retried(api: FakeMessagesApi, agents: dict[str, AgentDef]) -> None:
    api.script(api_error(400, "invalid_request_error", "tools.0.name: bad name"))
    with pytest.raises(LlmError, match=r"^the model API answered HTTP 400: tools\.0\.name: bad name$"):
        anyio.run(lambda: ask(api, agents, "hello"))
    assert len(api.requests) == 1


def test_tool_failures_go_back_to_the_model(api: FakeMessagesApi, agents: dict[str, AgentDef]) -> None:
    api.script(
        delegate("tpu-model-onboarding", "onboard /etc/passwd"),
        tool_use("mcp__tpu-onboarding__onboard_model", {"model_file": "/etc/passwd"}, use_id="toolu_x"),
        tool_use(OP_STATUS, {"op": ""}, use_id="toolu_y"),
        text("Both failed."),
        text("Both failed."),
    )
    answer = anyio.run(lambda: ask(api, agents, "onboard /etc/passwd"))
    assert answer.text == "Both failed."
    (outside,) = tool_results(api.bodies()[2])
    assert outside["is_error"] is True and "outside the allowed folders" in outside["content"]
    (bad_argument,) = tool_results(api.bodies()[3])
    assert bad_argument["is_error"] is True
    assert sum(e.kind == "tool_error" for e in answer.events) == 2


# --- the command -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_chat_llm_command_end_to_end(api: FakeMessagesApi) -> None:
    api.script(
        delegate("tpu-model-onboarding", "Is aten::nansum supported?"),
        tool_use(OP_STATUS, {"op": "aten::nansum"}),
        text("missing; rewrite with torch.where"),
        text("aten::nansum is missing in torch_tpu: rewrite it with torch.where."),
    )
    env = {
        **os.environ,
        **SAFE_ENV,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": api.url,
    }
    done = run_text(
        [sys.executable, "-m", "tpu_runtime.cli.app", "chat", "--llm", "--json", "--model", "claude-test"],
        input="Is aten::nansum supported?\n",
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    answer = json.loads(line)
    assert answer["text"] == "aten::nansum is missing in torch_tpu: rewrite it with torch.where."
    assert answer["agents"] == ["tpu-model-onboarding"] and answer["turns"] == 4
    assert api.bodies()[0]["model"] == "claude-test"
    assert json.loads(tool_results(api.bodies()[2])[0]["content"])["status"] == "missing"


def test_the_cli_default_model_is_the_engine_default() -> None:
    from tpu_runtime.cli.route_cmd import DEFAULT_MODEL_NAME
    from tpu_runtime.llm_agent import DEFAULT_MODEL

    assert DEFAULT_MODEL_NAME == DEFAULT_MODEL


def test_backend_reports_unknown_servers(agents: dict[str, AgentDef]) -> None:
    async def go() -> None:
        backend: ToolBackend
        async with McpBackend(specialist_servers(), roots=[Path.cwd()]) as backend:
            tools = await backend.tools()
            assert OP_STATUS in tools and not tools[OP_STATUS].destructive
            missing = await backend.call("mcp__tpu-nowhere__x", {})
            assert missing.is_error and "no MCP server serves" in missing.text

    anyio.run(go)
