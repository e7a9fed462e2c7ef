"""`tpu-agent route` and `tpu-agent chat`: which specialist takes a request, without or with a model.

`route` prints the rule-based decision (`tpu_runtime.router`). `chat` routes each line typed on a
terminal (or each line of standard input) and says which command or MCP tool the specialist will use;
with `--llm` and ANTHROPIC_API_KEY, a Claude router model delegates each line to a specialist model that
calls its allowlisted tools in this process (`tpu_runtime.llm_agent`). Only typer and rich load at
import; the router, the MCP servers and the anthropic SDK load inside the commands.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from tpu_runtime.cli.consoles import make_console
from tpu_runtime.errors import BadInput

if TYPE_CHECKING:
    from mcp.client import ClientRequestContext
    from mcp_types import ElicitRequestParams, ElicitResult, ErrorData

    from tpu_runtime.llm_agent import LlmAgent, LlmAnswer
    from tpu_runtime.router import RouteAnalysis

out = make_console(highlight=False)
err = make_console(stderr=True, highlight=False)

QUIT_WORDS = frozenset({"exit", "quit", ":q"})
DEFAULT_MODEL_NAME = (
    "claude-sonnet-4-5"  # tpu_runtime.llm_agent.DEFAULT_MODEL, named here to keep imports light
)

MCP_TOOLS = {
    "tpu-model-onboarding": "mcp__tpu-onboarding__onboard_model",
    "tpu-diagnostics": "mcp__tpu-diagnostics__diagnose",
    "tpu-kernel-development": "mcp__tpu-kernels__check_kernel",
    "tpu-knowledge-base": "mcp__tpu-knowledge__answer",
}
"""The first tool each specialist reaches for (see its agents/*.md allowlist)."""


def route(
    request: Annotated[str, typer.Argument(help="what you need, in your words")],
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="files or folders you would hand over: a model, a log, a profile, a kernel"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help='print {"agent": ..., "reason": ...}')] = False,
) -> None:
    """Say which specialist takes a request (and its files), with the reason. No API key needed.

    Example: tpu-agent route "why did my job crash?" logs/worker0.log --json
    """
    from tpu_runtime.router import analyse

    analysis = analyse(request, files or [])  # a RouteError is bad input: exit 2 at the CLI's boundary
    if as_json:
        sys.stdout.write(json.dumps(analysis.decision.model_dump(mode="json")) + "\n")
        return
    _print_route(analysis, request)


def next_step(analysis: RouteAnalysis, request: str) -> tuple[str, str]:
    """(the CLI command, the MCP tool) the chosen specialist starts with."""
    from tpu_runtime.router import DIAGNOSTIC_KINDS, DIAGNOSTICS, KERNELS, ONBOARDING, FileKind

    agent = analysis.decision.agent
    tool = MCP_TOOLS[agent]
    if agent == ONBOARDING:
        models = [
            shlex.quote(str(e.path))
            for e in analysis.evidence
            if e.kind in (FileKind.model, FileKind.training_script, FileKind.torch_code)
        ]
        if models:
            return f"tpu-agent onboard {models[0]}", tool
        op = _aten_op(request)
        if op:
            return f"tpu-agent ops show {op}", "mcp__tpu-onboarding__op_status"
        return "tpu-agent onboard MODEL.py", tool
    if agent == DIAGNOSTICS:
        evidence = [shlex.quote(str(e.path)) for e in analysis.evidence if e.kind in DIAGNOSTIC_KINDS]
        return f"tpu-agent diagnose {' '.join(evidence) or 'LOG_OR_PROFILE'}", tool
    if agent == KERNELS:
        kernels = [shlex.quote(str(e.path)) for e in analysis.evidence if e.kind is FileKind.pallas_kernel]
        if not kernels:
            return _planned("tpu-agent kernel new NAME --template TEMPLATE"), "mcp__tpu-kernels__new_kernel"
        return _planned(f"tpu-agent kernel check {kernels[0]}"), tool
    return f"tpu-agent ask {shlex.quote(request.strip() or 'QUESTION')}", tool


def _aten_op(text: str) -> str | None:
    match = re.search(r"\baten(?:::|\.)(\w+(?:\.\w+)?)", text)
    return f"aten::{match.group(1)}" if match else None


def _planned(command: str) -> str:
    """The command, marked when this build's CLI does not have its group yet (specialists land over time)."""
    group = command.split()[1]
    return command if _cli_has(group) else f"{command} (not in this build yet)"


_main_app: list[typer.Typer] = []
"""The app `register_route` added these commands to: what `_cli_has` asks (no import of cli.app here)."""


def _cli_has(name: str) -> bool:
    """Whether this build's CLI has a command or group named `name`."""
    if not _main_app:
        return True  # not registered in an app: nothing to compare with, so nothing is marked
    app = _main_app[0]
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    names |= {g.name or "" for g in app.registered_groups}
    return name in names


def _print_route(analysis: RouteAnalysis, request: str | None = None) -> None:
    decision = analysis.decision
    out.print(f"[bold cyan]{decision.agent}[/]: {decision.reason}", soft_wrap=True)
    if request is not None:
        command, tool = next_step(analysis, request)
        out.print(f"  next: [green]{command}[/]   (MCP tool {tool})", soft_wrap=True)


class ChatLine(NamedTuple):
    request: str
    files: list[Path]  # the paths named in the line that exist here: attached
    missing: list[str]  # words that look like paths but do not exist: reported, not attached


def split_line(line: str) -> ChatLine:
    """A chat line -> the request, the paths in it that exist here, and path-like words that do not."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    files: list[Path] = []
    missing: list[str] = []
    for word in words:
        word = word.rstrip(",;:?!)")
        if "://" in word or not re.search(r"/|\.[A-Za-z][\w.]{0,9}$", word):
            continue
        path = Path(word).expanduser()
        if path.exists():
            if path not in files:
                files.append(path)
        elif "/" in word or re.search(r"\.(py|log|txt|pb|json|gz|hlo|out|err)$", word):
            missing.append(word)
    return ChatLine(line.strip(), files, missing)


def chat(
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="answer with Claude (needs ANTHROPIC_API_KEY): a router model hands each request to a "
            "specialist model that calls its allowlisted tools here",
        ),
    ] = False,
    model: Annotated[
        str | None, typer.Option(help=f"Claude model for --llm (default: {DEFAULT_MODEL_NAME})")
    ] = None,
    max_turns: Annotated[
        int, typer.Option(min=1, max=100, help="--llm: model calls allowed per request")
    ] = 12,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object per request")] = False,
) -> None:
    """Route each request you type to a specialist and say what it will run (reads standard input
    line by line when it is not a terminal). Name files in a line to attach them.

    Example: tpu-agent chat        (or: echo "why is my step slow? run/profile" | tpu-agent chat --json)
    """
    interactive = sys.stdin.isatty() and not as_json
    if llm and not os.environ.get("ANTHROPIC_API_KEY"):
        raise BadInput("--llm needs ANTHROPIC_API_KEY in the environment (chat without --llm needs no key)")
    if interactive:
        out.print(
            "Describe what you need; name files to attach them. "
            + ("Claude answers (--llm). " if llm else "")
            + "An empty line, 'exit' or Ctrl-D ends.",
            style="dim",
        )
    if llm:
        failed = _chat_llm(model or DEFAULT_MODEL_NAME, max_turns, as_json, interactive)
    else:
        failed = _chat_rules(as_json, interactive)
    if failed and not interactive:
        raise typer.Exit(1)


def _lines(interactive: bool) -> Iterator[str]:
    """The requests: prompted on a terminal, else read from standard input."""
    while True:
        if interactive:
            try:
                line = out.input("[bold]tpu-agent>[/] ")
            except (EOFError, KeyboardInterrupt):
                out.print()
                return
            if not line.strip() or line.strip().lower() in QUIT_WORDS:
                return
        else:
            line = sys.stdin.readline()
            if not line:
                return
            if not line.strip():
                continue
        yield line


def _chat_rules(as_json: bool, interactive: bool) -> bool:
    from tpu_runtime.router import RouteError, analyse

    failed = False
    for line in _lines(interactive):
        request, files, missing = split_line(line)
        for word in missing:
            err.print(f"[yellow]not attached:[/] {word} (no such file or folder)", soft_wrap=True)
        try:
            analysis = analyse(request, files)
        except RouteError as exc:
            err.print(f"[bold red]error:[/] {exc}", soft_wrap=True)
            failed = True
            continue
        if as_json:
            command, tool = next_step(analysis, request)
            record = {
                "request": request,
                "files": [str(f) for f in files],
                **analysis.decision.model_dump(mode="json"),
                "command": command,
                "tool": tool,
            }
            sys.stdout.write(json.dumps(record) + "\n")
            sys.stdout.flush()
        else:
            _print_route(analysis, request)
    return failed


def _chat_llm(model: str, max_turns: int, as_json: bool, interactive: bool) -> bool:
    import anyio

    return anyio.run(_chat_llm_async, model, max_turns, as_json, interactive)


async def _chat_llm_async(model: str, max_turns: int, as_json: bool, interactive: bool) -> bool:
    from anthropic import AsyncAnthropic

    from mcp_servers.all import specialist_modules
    from tpu_runtime.agent_defs import load_agents
    from tpu_runtime.llm_agent import LlmAgent, LlmError, McpBackend, playbooks_for

    agents = load_agents()
    servers = {module.NAME: module.build_server for module in specialist_modules()}
    on_terminal = sys.stdin.isatty() and sys.stderr.isatty()
    failed = False
    async with McpBackend(
        servers, roots=[Path.cwd()], elicit=_elicit_on_terminal if on_terminal else None
    ) as backend:
        agent = LlmAgent(
            AsyncAnthropic(),
            backend,
            agents,
            model=model,
            max_turns=max_turns,
            confirm=_confirm_on_terminal if on_terminal else None,
            playbooks=playbooks_for(agents),
        )
        for line in _lines(interactive):
            try:
                answer = await _answer(agent, line)
            except LlmError as exc:
                err.print(f"[bold red]error:[/] {exc}", soft_wrap=True)
                failed = True
                continue
            if as_json:
                sys.stdout.write(answer.model_dump_json() + "\n")
                sys.stdout.flush()
            else:
                via = " -> ".join(answer.agents) or "the router"
                out.print(f"[dim]({via}, {answer.turns} model calls)[/]")
                out.print(answer.text, markup=False, soft_wrap=True)
            failed = failed or answer.stopped != "done"
    return failed


async def _answer(agent: LlmAgent, line: str) -> LlmAnswer:
    from tpu_runtime.llm_agent import LlmError
    from tpu_runtime.router import RouteError, analyse

    request, files, missing = split_line(line)
    for word in missing:
        err.print(f"[yellow]not attached:[/] {word} (no such file or folder)", soft_wrap=True)
    try:
        decision = analyse(request, files).decision
    except RouteError as exc:
        raise LlmError(str(exc)) from None
    return await agent.ask(request, files, hint=f"{decision.agent} ({decision.reason})")


async def _confirm_on_terminal(tool: str, arguments: dict[str, Any]) -> bool:
    """The person decides, on their terminal, whether a tool that changes something may run."""
    import anyio.to_thread

    shown = json.dumps(arguments, indent=2, sort_keys=True)
    err.print(f"[bold yellow]{tool}[/] wants to run with:\n{shown}", markup=True, soft_wrap=True)
    return bool(
        await anyio.to_thread.run_sync(lambda: typer.confirm("Allow this call?", default=False, err=True))
    )


async def _elicit_on_terminal(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult | ErrorData:
    """A server asks the person (e.g. to approve a run): show its message and ask on the terminal."""
    import anyio.to_thread
    from mcp_types import ElicitResult

    message = getattr(params, "message", "")
    schema = getattr(params, "requested_schema", None) or {}
    err.print(f"[bold yellow]A tool asks:[/] {message}", soft_wrap=True)
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}

    def ask() -> ElicitResult:
        if not typer.confirm("Answer yes?", default=False, err=True):
            return ElicitResult(action="decline")
        content: dict[str, str | int | float | bool | list[str] | None] = {}
        for name, spec in properties.items():
            kind = spec.get("type") if isinstance(spec, dict) else None
            if kind == "boolean":
                content[name] = True
            else:
                content[name] = typer.prompt(name, err=True)
        return ElicitResult(action="accept", content=content)

    result: ElicitResult = await anyio.to_thread.run_sync(ask)
    return result


def register_route(app: typer.Typer) -> None:
    """Add `route` and `chat` to the main app."""
    _main_app[:] = [app]
    app.command("route")(route)
    app.command("chat")(chat)
