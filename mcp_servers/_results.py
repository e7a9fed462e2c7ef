"""Tool results and annotations every server builds the same way."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from tpu_runtime.errors import TpuAgentError

T = TypeVar("T")


def error_result(text: str, *, first_line_only: bool = False) -> CallToolResult:
    """A failed tool call the model can read; the server carries on."""
    if first_line_only:
        text = (text.strip().splitlines() or ["unknown error"])[0]
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def tool_error(
    exc: Exception, what: str, logger: logging.Logger, *, first_line_only: bool = False
) -> CallToolResult:
    """The tool error for an exception a tool's engine call raised: the suite's own errors say what to
    change in their message; anything else is a fault of tpu-agent, one line to the caller and the
    traceback to the server's log. Call it inside the `except` block (the log takes the traceback)."""
    if isinstance(exc, TpuAgentError):
        return error_result(str(exc), first_line_only=first_line_only)
    logger.exception("%s failed", what)
    first_line = (str(exc).strip().splitlines() or [""])[0]
    text = f"{what} failed inside tpu-agent: {type(exc).__name__}: {first_line}"
    return error_result(text, first_line_only=first_line_only)


async def worker_call(
    fn: Callable[[], T],
    what: str,
    logger: logging.Logger,
    limiter: anyio.CapacityLimiter,
    *,
    first_line_only: bool = False,
) -> T | CallToolResult:
    """Run an engine call on a worker thread (at most `limiter`'s number at a time): its value, or the
    `tool_error` for what it raised."""
    try:
        return await anyio.to_thread.run_sync(fn, limiter=limiter)
    except Exception as exc:
        return tool_error(exc, what, logger, first_line_only=first_line_only)


def model_result(model: BaseModel) -> CallToolResult:
    """Structured content for clients that read it, the same JSON as text for those that do not."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )


def outcome_result(outcome: BaseModel | CallToolResult) -> CallToolResult:
    """A tool's answer from a step that returns either its report or the error result it already built."""
    return outcome if isinstance(outcome, CallToolResult) else model_result(outcome)


def tool_hints(
    title: str | None,
    *,
    read_only: bool,
    destructive: bool = False,
    idempotent: bool = True,
    open_world: bool = False,
) -> ToolAnnotations:
    """A tool's hints for the client; the defaults describe a tool that stays on this machine."""
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


def read_only(title: str | None) -> ToolAnnotations:
    """A tool that only reads: safe to call again, touches nothing outside this machine."""
    return tool_hints(title, read_only=True)
