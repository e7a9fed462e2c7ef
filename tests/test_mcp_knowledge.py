"""The tpu-knowledge MCP server on a small corpus in a temporary folder, through the SDK's in-memory Client.

No index at first: the first query builds the lexical side (seconds, with progress) and says so;
kb_build adds the vectors, after which answers are hybrid. Then `serve knowledge|runs` over stdio.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import TextContent

import mcp_servers.knowledge as knowledge_server
from mcp_servers import all as all_servers
from mcp_servers.knowledge import NAME, build_server
from tests.conftest import REPO
from tests.kb_helpers import write_corpus
from tests.mcp_support import SAFE_ENV
from tpu_runtime.knowledge.build import BuildRequest
from tpu_runtime.knowledge.store import Store

Events = list[tuple[float, float | None, str | None]]


@pytest.fixture
def corpus(tmp_path: Path) -> BuildRequest:
    """Three fact sheets, no packages, and an index folder that does not exist yet."""
    return write_corpus(tmp_path)


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def _recorder(events: Events) -> Any:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    return on_progress


@pytest.mark.anyio
async def test_tools_prompt_annotations_and_schemas(corpus: BuildRequest) -> None:
    async with Client(build_server(corpus)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        prompt = await client.get_prompt("ask", {"question": "What is VMEM?"})
    assert set(tools) == {"answer", "search", "kb_status", "kb_build"}
    for name in ("answer", "search", "kb_status"):
        hints = tools[name].annotations
        assert hints is not None and hints.read_only_hint is True and hints.idempotent_hint is True
    build = tools["kb_build"].annotations
    assert build is not None and build.read_only_hint is False and build.destructive_hint is False
    assert build.idempotent_hint is True
    assert {"covered", "answer", "citations", "passages", "closest", "mode", "notes"} <= set(
        tools["answer"].output_schema["properties"]  # type: ignore[index]
    )
    assert {"passages", "mode", "notes"} <= set(tools["search"].output_schema["properties"])  # type: ignore[index]
    assert {"exists", "dense_ready", "stale"} <= set(tools["kb_status"].output_schema["properties"])  # type: ignore[index]
    assert set(tools["answer"].input_schema["properties"]) == {"question", "k"}
    assert set(tools["kb_build"].input_schema["properties"]) == {"lexical_only"}
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "What is VMEM?" in text and "workflows/ask.yaml" in text and "Retrieve passages" in text
    assert NAME in {module.NAME for module in all_servers.specialist_modules()}


@pytest.mark.anyio
async def test_first_answer_builds_the_lexical_side_says_so_and_cites(corpus: BuildRequest) -> None:
    assert corpus.folder is not None and not Store(corpus.folder).exists()
    events: Events = []
    async with Client(build_server(corpus)) as client:
        result = await client.call_tool(
            "answer", {"question": "PrefetchScalarGridSpec", "k": 3}, progress_callback=_recorder(events)
        )
        assert not result.is_error, _text(result)
        reply = result.structured_content
        status = (await client.call_tool("kb_status", {})).structured_content
        found = (
            await client.call_tool("search", {"query": "TORCH_DEVICE_BACKEND_AUTOLOAD", "k": 2})
        ).structured_content
        missing = (
            await client.call_tool("answer", {"question": "What is the price of a Bitcoin mining rig?"})
        ).structured_content
    assert reply["covered"] is True and reply["mode"] == "lexical"
    citation = reply["citations"][0]
    assert (
        citation["url"] == "https://example.org/sparse" and citation["quote"] in reply["passages"][0]["text"]
    )
    assert len(reply["passages"]) <= 3
    assert any(note.startswith("there was no index yet: built its lexical side") for note in reply["notes"])
    assert any("kb_build" in note for note in reply["notes"])
    values = [p for p, _, _ in events]
    assert values and values == sorted(set(values)) and values[-1] == 1.0  # the build's progress, over MCP
    assert all(total == 1.0 for _, total, _ in events)

    assert status["exists"] and status["lexical_ready"] and not status["dense_ready"]
    assert status["chunks"] == sum(u["chunks"] for u in status["units"]) > 0
    assert found["mode"] == "lexical" and len(found["passages"]) == 2
    assert found["passages"][0]["url"] == "https://example.org/env"
    assert "TORCH_DEVICE_BACKEND_AUTOLOAD" in found["passages"][0]["text"]
    assert missing["covered"] is False and (missing["closest"] or "").startswith("https://")
    assert not any(note.startswith("there was no index yet") for note in missing["notes"])  # built once


@pytest.mark.slow
@pytest.mark.anyio
async def test_kb_build_adds_the_vectors_then_answers_are_hybrid(corpus: BuildRequest) -> None:
    events: Events = []
    async with Client(build_server(corpus)) as client:
        built = await client.call_tool("kb_build", {}, progress_callback=_recorder(events))
        assert not built.is_error, _text(built)
        again = (await client.call_tool("kb_build", {})).structured_content
        reply = (
            await client.call_tool("answer", {"question": "How do I pick the eager mode?"})
        ).structured_content
    report = built.structured_content
    assert report["dense_ready"] is True and sorted(report["embedded"]) == sorted(report["indexed"])
    assert any("embedding" in (message or "") for _, _, message in events)
    assert [p for p, _, _ in events][-1] == 1.0
    assert (
        again["embedded"] == []
        and again["indexed"] == []
        and len(again["unchanged"]) == len(report["indexed"])
    )
    assert reply["mode"] == "hybrid" and reply["covered"] is True
    assert not any("kb_build" in note for note in reply["notes"])
    assert "set_eager_mode" in reply["passages"][0]["text"]


@pytest.mark.anyio
async def test_bad_questions_and_a_busy_build_are_one_line_errors(
    corpus: BuildRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert corpus.folder is not None
    monkeypatch.setattr(knowledge_server, "WAIT_FOR_OTHER_BUILD_S", 0.3)
    async with Client(build_server(corpus)) as client:
        huge = await client.call_tool("answer", {"question": "x" * 3000})
        assert huge.is_error
        assert _text(huge) == (
            "the question is 3,000 characters; the limit is 2,000. Ask one question, or search for the "
            "error line or flag name alone"
        )
        for tool, arguments in (
            ("answer", {"question": ""}),
            ("answer", {"question": "   "}),
            ("search", {"query": "pallas", "k": 0}),
            ("search", {"query": "pallas", "k": 51}),
            ("kb_build", {"lexical_only": "sometimes"}),
        ):
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments)
        assert not Store(corpus.folder).exists()  # bad input never starts a build

        with Store(corpus.folder).build_lock():  # another process is building and has written nothing yet
            busy = await client.call_tool("answer", {"question": "block shapes"})
            busy_build = await client.call_tool("kb_build", {"lexical_only": True})
        assert busy.is_error and "another knowledge-base build is running" in _text(busy)
        assert busy_build.is_error and "another knowledge-base build is running" in _text(busy_build)
        alive = await client.call_tool("search", {"query": "block shapes divisible by 8 and 128"})
    assert (
        not alive.is_error and alive.structured_content["passages"][0]["url"] == "https://example.org/pallas"
    )


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "tool", "key"), [("knowledge", "kb_status", "exists"), ("runs", "list_targets", "targets")]
)
async def test_serve_over_stdio(tmp_path: Path, name: str, tool: str, key: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tpu_runtime.cli.app", "serve", name],
        env={
            **SAFE_ENV,
            "TPU_AGENT_DATA_DIR": str(tmp_path / "data"),
            "TPU_AGENT_HOME": str(tmp_path / "home"),
        },
        cwd=REPO,
    )
    async with Client(params, mode="legacy") as client:  # the handshake Claude Code uses
        assert client.server_info is not None and client.server_info.name == f"tpu-{name}"
        result = await client.call_tool(tool, {})
    assert not result.is_error, _text(result)
    empty = result.structured_content[key]
    assert empty in (False, [])  # a fresh data folder: no index, no targets
