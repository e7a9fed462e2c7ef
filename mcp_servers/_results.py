"""Tool results and annotations every server builds the same way."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel


def error_result(text: str, *, first_line_only: bool = False) -> CallToolResult:
    """A failed tool call the model can read; the server carries on."""
    if first_line_only:
        text = (text.strip().splitlines() or ["unknown error"])[0]
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def model_result(model: BaseModel) -> CallToolResult:
    """Structured content for clients that read it, the same JSON as text for those that do not."""
    return CallToolResult(
        content=[TextContent(type="text", text=model.model_dump_json())],
        structured_content=model.model_dump(mode="json"),
    )


def read_only(title: str) -> ToolAnnotations:
    """A tool that only reads: safe to call again, touches nothing outside this machine."""
    return ToolAnnotations(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
