"""LLM mode: a router model hands each request to one specialist model, which may call only its tools.

The prompts are the bodies of `agents/*.md` and the allowlists are their `tools:` lists, so the CLI's
LLM mode and Claude Code run the same agents. The loop is the Anthropic Messages API's tool use
(https://docs.anthropic.com/en/docs/build-with-claude/tool-use): the router model has one tool,
`delegate`; each specialist gets the MCP tools of its allowlist as tools of the same fully qualified
names (`mcp__tpu-onboarding__op_status`). What keeps it safe does not depend on the model:

- a tool outside the specialist's allowlist is never run; the model gets a tool error saying so;
- no tool approves a run: a tool whose name says it approves is refused even when listed, and a tool the
  server marks destructive or as needing the person runs only if `confirm` (the CLI's prompt on a
  terminal) says yes; without a terminal it does not run;
- every model call counts against one turn limit for the whole request.

Tools are reached through `ToolBackend`; `McpBackend` connects in-memory MCP clients to server objects
the front end passes in, so this module never imports the MCP front ends themselves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, Field

from tpu_runtime.agent_defs import ROUTER, SPECIALISTS, AgentDef, canonical_tool_name, split_tool_name
from tpu_runtime.errors import ExternalError

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message
    from mcp import Client
    from mcp.client import ClientRequestContext
    from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, ErrorData, ListRootsResult

DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_MAX_TURNS = 12
MAX_TOKENS = 4096
MAX_TOOL_RESULT_CHARS = 30_000
DELEGATE = "delegate"
APPROVING = re.compile(r"approv", re.IGNORECASE)
REQUIRES_PERSON = "anthropic/requiresUserInteraction"

ConfirmFn = Callable[[str, dict[str, Any]], Awaitable[bool]]
"""(fully qualified tool name, arguments) -> whether the person allows this call to run."""


class LlmError(ExternalError, RuntimeError):
    """The model API failed (after the SDK's own retries) or answered in a way the loop cannot use."""


class ToolSpec(BaseModel):
    """A tool a backend can run, as the model sees it plus what the gate needs to know."""

    name: str = Field(description="fully qualified: mcp__<server>__<tool>")
    description: str = ""
    input_schema: dict[str, Any]
    destructive: bool = False
    needs_person: bool = False


class ToolOutcome(BaseModel):
    text: str
    is_error: bool = False


class ToolBackend(Protocol):
    async def tools(self) -> dict[str, ToolSpec]: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome: ...


EventKind = Literal["route", "delegate", "tool", "refused", "tool_error", "answer", "turn_limit"]


class Event(BaseModel):
    """One thing that happened while answering, for the transcript the CLI can show."""

    kind: EventKind
    agent: str
    detail: str


class LlmAnswer(BaseModel):
    text: str
    agents: list[str] = Field(description="the specialists the router delegated to, in order")
    turns: int = Field(description="model calls made")
    stopped: Literal["done", "turn_limit"] = "done"
    events: list[Event]


@dataclass
class _Run:
    max_turns: int
    turns: int = 0
    events: list[Event] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)

    def note(self, kind: EventKind, agent: str, detail: str) -> None:
        self.events.append(Event(kind=kind, agent=agent, detail=detail))


class _TurnLimit(Exception):
    pass


DELEGATE_TOOL: dict[str, Any] = {
    "name": DELEGATE,
    "description": "Hand the request to one specialist, which does the work with its own tools and "
    "returns its answer. Call it once per request with everything the specialist needs.",
    "input_schema": {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "enum": list(SPECIALISTS), "description": "the specialist"},
            "task": {
                "type": "string",
                "description": "the user's request in their words, the absolute paths of their files "
                "and what each file is",
            },
        },
        "required": ["agent", "task"],
    },
}


class LlmAgent:
    """Answers one request at a time: router model -> one specialist model -> its allowlisted tools."""

    def __init__(
        self,
        client: AsyncAnthropic,
        backend: ToolBackend,
        agents: Mapping[str, AgentDef],
        *,
        model: str = DEFAULT_MODEL,
        max_turns: int = DEFAULT_MAX_TURNS,
        confirm: ConfirmFn | None = None,
        playbooks: Mapping[str, str] | None = None,
    ) -> None:
        missing = [name for name in (ROUTER, *SPECIALISTS) if name not in agents]
        if missing:
            raise LlmError(f"agent definitions missing: {', '.join(missing)}")
        if max_turns < 1:
            raise LlmError("max_turns must be at least 1")
        self.client = client
        self.backend = backend
        self.agents = agents
        self.model = model
        self.max_turns = max_turns
        self.confirm = confirm
        self.playbooks = dict(playbooks or {})

    async def ask(self, request: str, files: Sequence[Path] = (), hint: str | None = None) -> LlmAnswer:
        """Route `request` through the router model and the specialist it picks; return the final text."""
        run = _Run(max_turns=self.max_turns)
        attached = "\n".join(f"- {Path(f).resolve()}" for f in files)
        content = request.strip() or "(no text; see the attached files)"
        if attached:
            content += f"\n\nAttached files:\n{attached}"
        if hint:
            content += f"\n\n(The rule-based router suggests: {hint})"
            run.note("route", ROUTER, hint)
        try:
            text = await self._loop(run, ROUTER, self._router_system(), [DELEGATE_TOOL], content)
        except _TurnLimit:
            run.note("turn_limit", ROUTER, f"stopped after {run.turns} model calls")
            return LlmAnswer(
                text=f"Stopped: the request used the limit of {self.max_turns} model turns before an answer. "
                "Ask again more narrowly, or raise --max-turns.",
                agents=run.agents,
                turns=run.turns,
                stopped="turn_limit",
                events=run.events,
            )
        run.note("answer", ROUTER, text[:200])
        return LlmAnswer(text=text, agents=run.agents, turns=run.turns, events=run.events)

    # --- prompts ----------------------------------------------------------------------------------

    def _router_system(self) -> str:
        router = self.agents[ROUTER]
        lines = [router.body, "", "The specialists you can delegate to (tool `delegate`):"]
        for name in SPECIALISTS:
            lines.append(f"- {name}: {self.agents[name].description}")
        return "\n".join(lines)

    def _specialist_system(self, name: str) -> str:
        agent = self.agents[name]
        parts = [agent.body]
        playbook = self.playbooks.get(name)
        if playbook:
            parts += ["", "Your playbook:", playbook]
        parts += [
            "",
            "You can call only the tools you were given. Runs on TPU VMs happen only after the person "
            "approves each one in their own terminal; no tool approves, and you must not try.",
        ]
        return "\n".join(parts)

    # --- the loop ---------------------------------------------------------------------------------

    async def _loop(
        self, run: _Run, agent: str, system: str, tools: list[dict[str, Any]], content: str
    ) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
        while True:
            response = await self._create(run, system, tools, messages)
            assistant = _assistant_content(response)
            messages.append({"role": "assistant", "content": assistant})
            uses = [block for block in assistant if block["type"] == "tool_use"]
            if response.stop_reason == "pause_turn":
                continue
            if not uses:
                text = "\n".join(block["text"] for block in assistant if block["type"] == "text").strip()
                if response.stop_reason == "max_tokens":
                    text += "\n\n(the answer was cut at the output limit)"
                return text
            results = []
            for use in uses:
                outcome = await self._run_tool(run, agent, use["name"], use["input"])
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": use["id"],
                    "content": outcome.text,
                }
                if outcome.is_error:
                    result["is_error"] = True
                results.append(result)
            messages.append({"role": "user", "content": results})

    async def _create(
        self, run: _Run, system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> Message:
        if run.turns >= run.max_turns:
            raise _TurnLimit
        run.turns += 1
        import anthropic

        try:
            return await self.client.messages.create(
                model=self.model,
                max_tokens=MAX_TOKENS,
                system=system,
                tools=tools if tools else anthropic.omit,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
            )
        except anthropic.RateLimitError as exc:
            raise LlmError(
                f"the model API kept answering HTTP 429 (rate limited) after {self.client.max_retries} "
                f"retries: {_api_message(exc)}"
            ) from None
        except anthropic.APIStatusError as exc:
            raise LlmError(f"the model API answered HTTP {exc.status_code}: {_api_message(exc)}") from None
        except anthropic.APIConnectionError as exc:
            raise LlmError(f"cannot reach the model API: {exc}") from None

    async def _run_tool(self, run: _Run, agent: str, name: str, arguments: object) -> ToolOutcome:
        if agent == ROUTER:
            return await self._delegate(run, name, arguments)
        definition = self.agents[agent]
        if not definition.allows(name):
            run.note("refused", agent, f"{name}: not on the allowlist")
            listed = ", ".join(f"mcp__{server}__{tool}" for server, tool in definition.mcp_tools()) or "none"
            return ToolOutcome(
                text=f"refused: {name} is not on {agent}'s tool allowlist, so it was not run. "
                f"Allowed tools: {listed}.",
                is_error=True,
            )
        if APPROVING.search(name):
            run.note("refused", agent, f"{name}: no tool may approve")
            return ToolOutcome(
                text=f"refused: {name} would approve a run. Approval is the person's decision, made in "
                "their own terminal (`tpu-agent approvals approve ID`); nothing was run.",
                is_error=True,
            )
        available = await self.backend.tools()
        name = canonical_tool_name(name)
        spec = available.get(name)
        if spec is None:
            run.note("tool_error", agent, f"{name}: not available")
            return ToolOutcome(
                text=f"{name} is not available in this installation (its MCP server is not running or "
                "not built yet); answer without it and say so.",
                is_error=True,
            )
        if not isinstance(arguments, dict):
            return ToolOutcome(text=f"{name} takes a JSON object of arguments", is_error=True)
        if spec.destructive or spec.needs_person:
            allowed_now = self.confirm is not None and await self.confirm(name, arguments)
            if not allowed_now:
                run.note("refused", agent, f"{name}: the person did not approve")
                return ToolOutcome(
                    text=f"not run: {name} changes something outside this machine and the person did not "
                    "approve it here (no terminal to ask, or they said no).",
                    is_error=True,
                )
        run.note("tool", agent, f"{name} {json.dumps(arguments, sort_keys=True)[:200]}")
        outcome = await self.backend.call(name, arguments)
        if outcome.is_error:
            run.note("tool_error", agent, f"{name}: {outcome.text[:200]}")
        if len(outcome.text) > MAX_TOOL_RESULT_CHARS:
            outcome = ToolOutcome(
                text=outcome.text[:MAX_TOOL_RESULT_CHARS] + "\n... (cut here)", is_error=outcome.is_error
            )
        return outcome

    async def _delegate(self, run: _Run, name: str, arguments: object) -> ToolOutcome:
        if name != DELEGATE:
            run.note("refused", ROUTER, f"{name}: the router only delegates")
            return ToolOutcome(
                text=f"refused: the router runs nothing itself; its only tool is {DELEGATE}.", is_error=True
            )
        agent = arguments.get("agent") if isinstance(arguments, dict) else None
        task = arguments.get("task") if isinstance(arguments, dict) else None
        if agent not in SPECIALISTS or not isinstance(task, str) or not task.strip():
            return ToolOutcome(
                text=f"delegate takes agent (one of {', '.join(SPECIALISTS)}) and a non-empty task",
                is_error=True,
            )
        assert isinstance(agent, str)
        run.agents.append(agent)
        run.note("delegate", ROUTER, f"{agent}: {task[:200]}")
        available = await self.backend.tools()
        tools = [
            {"name": spec.name, "description": spec.description, "input_schema": spec.input_schema}
            for server, tool in self.agents[agent].mcp_tools()
            if (spec := available.get(f"mcp__{server}__{tool}")) is not None
        ]
        text = await self._loop(run, agent, self._specialist_system(agent), tools, task)
        return ToolOutcome(text=text or "(the specialist gave no answer)")


def _assistant_content(response: Message) -> list[dict[str, Any]]:
    """The response's blocks as request parameters (text and tool_use; others are not sent back)."""
    blocks: list[dict[str, Any]] = []
    for block in response.content:
        if block.type == "text":
            blocks.append({"type": "text", "text": block.text})
        elif block.type == "tool_use":
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return blocks


def _api_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def playbooks_for(agents: Mapping[str, AgentDef]) -> dict[str, str]:
    """Each agent's playbook (its `workflow:` file) as numbered steps, for its system prompt."""
    from tpu_runtime.workflow import load_workflow

    out: dict[str, str] = {}
    for name, agent in agents.items():
        if not agent.workflow:
            continue
        workflow = load_workflow(Path(agent.workflow).stem)
        lines = [f"{workflow.title} ({agent.workflow}):"]
        for number, step in enumerate(workflow.steps, 1):
            line = f"{number}. {step.title}"
            if step.proves:
                line += f" (proves: {step.proves})"
            if step.gate == "approval":
                line += " [runs only after the person approves it]"
            lines.append(line)
        out[name] = "\n".join(lines)
    return out


ElicitFn = Callable[["ClientRequestContext", "ElicitRequestParams"], Awaitable["ElicitResult | ErrorData"]]


class McpBackend:
    """Tools from MCP servers, reached by in-memory MCP clients, under Claude Code's fully qualified names.

    `servers` maps each server's name (as in `.mcp.json`, e.g. "tpu-onboarding") to a factory of its
    server object. File paths are confined to `roots`, which the clients report as their roots.
    `elicit` answers the servers' questions to the person (the CLI prompts on a terminal); without it
    every question is declined.
    """

    def __init__(
        self,
        servers: Mapping[str, Callable[[], Any]],
        roots: Sequence[Path] = (),
        elicit: ElicitFn | None = None,
    ) -> None:
        self.servers = dict(servers)
        self.roots = [Path(r).resolve() for r in roots] or [Path.cwd().resolve()]
        self.elicit = elicit
        self._stack = AsyncExitStack()
        self._clients: dict[str, Client] = {}
        self._tools: dict[str, ToolSpec] | None = None

    async def __aenter__(self) -> McpBackend:
        from mcp import Client

        for name, factory in self.servers.items():
            client = Client(
                factory(),
                list_roots_callback=self._list_roots,
                elicitation_callback=self._elicit,
            )
            self._clients[name] = await self._stack.enter_async_context(client)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()
        self._clients.clear()

    async def _list_roots(self, context: ClientRequestContext) -> ListRootsResult:
        from mcp_types import ListRootsResult, Root

        return ListRootsResult(roots=[Root(uri=r.as_uri(), name=r.name or str(r)) for r in self.roots])  # type: ignore[arg-type]

    async def _elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        from mcp_types import ElicitResult

        if self.elicit is None:
            return ElicitResult(action="decline")
        return await self.elicit(context, params)

    async def tools(self) -> dict[str, ToolSpec]:
        if self._tools is None:
            found: dict[str, ToolSpec] = {}
            for server, client in self._clients.items():
                for tool in (await client.list_tools()).tools:
                    annotations = tool.annotations
                    meta = tool.meta or {}
                    qualified = f"mcp__{server}__{tool.name}"
                    found[qualified] = ToolSpec(
                        name=qualified,
                        description=tool.description or tool.title or "",
                        input_schema=dict(tool.input_schema),
                        destructive=_destructive(annotations),
                        needs_person=bool(meta.get(REQUIRES_PERSON)),
                    )
            self._tools = found
        return self._tools

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        split = split_tool_name(name)
        client = self._clients.get(split[0]) if split else None
        if split is None or client is None:
            return ToolOutcome(text=f"no MCP server serves {name}", is_error=True)
        try:
            result = await client.call_tool(split[1], arguments)
        except Exception as exc:  # a protocol error is the tool's failure, reported to the model
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            return ToolOutcome(text=f"{name} failed: {first}", is_error=True)
        return _outcome(result)


def _destructive(annotations: Any) -> bool:
    """MCP's defaults: a tool is destructive unless it says it is read-only or says it is not."""
    if annotations is None:
        return True
    if annotations.read_only_hint:
        return False
    return annotations.destructive_hint is not False


def _outcome(result: CallToolResult) -> ToolOutcome:
    texts = [getattr(block, "text", None) for block in result.content]
    text = "\n".join(t for t in texts if isinstance(t, str))
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content)
    return ToolOutcome(text=text or "(no content)", is_error=bool(result.is_error))
