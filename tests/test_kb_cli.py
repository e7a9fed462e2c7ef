"""`tpu-agent ask` and `tpu-agent kb ...` as a user runs them, on a small index in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kb_helpers import built_data_dir, write_docs
from tests.subprocess_support import python_output, run_text


def _cli(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TPU_AGENT_DATA_DIR": str(data)}
    return run_text(
        [sys.executable, "-m", "tpu_runtime.cli.app", *args],
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_data_dir(tmp_path_factory.mktemp("kbcli"))


@pytest.mark.slow
def test_ask_json_has_the_documented_schema(data_dir: Path) -> None:
    done = _cli("ask", "PrefetchScalarGridSpec", "--json", "--k", "2", data=data_dir)
    assert done.returncode == 0, done.stderr
    reply: dict[str, Any] = json.loads(done.stdout)
    assert reply["covered"] is True and isinstance(reply["answer"], str)
    citation = reply["citations"][0]
    assert set(citation) >= {"source", "url", "quote"} and citation["url"] == "https://example.org/sparse"
    assert len(reply["passages"]) <= 2
    for passage in reply["passages"]:
        assert set(passage) >= {"text", "source", "url", "score"}
        assert isinstance(passage["score"], float)
    assert citation["quote"] in reply["passages"][0]["text"]


@pytest.mark.slow
def test_ask_not_covered_and_terminal_output(data_dir: Path) -> None:
    done = _cli("ask", "What is the price of a Bitcoin mining rig?", data=data_dir)
    assert done.returncode == 0, done.stderr
    assert "Not covered" in done.stdout and "closest page to read: https://" in done.stdout
    assert "lexical search only" in done.stderr


@pytest.mark.slow
def test_bad_questions_get_one_line_and_exit_2(data_dir: Path) -> None:
    huge = _cli("ask", "x" * 100_000, data=data_dir)
    assert huge.returncode == 2
    assert "the question is 100,000 characters; the limit is 2,000" in huge.stderr
    assert len(huge.stderr.strip().splitlines()) == 1
    empty = _cli("ask", "   ", data=data_dir)
    assert empty.returncode == 2 and "empty" in empty.stderr


@pytest.mark.slow
def test_kb_status_and_add(data_dir: Path, tmp_path: Path) -> None:
    status = json.loads(_cli("kb", "status", "--json", data=data_dir).stdout)
    assert status["exists"] and status["lexical_ready"] and status["chunks"] > 0
    assert status["index_dir"] == str(data_dir / "kb")
    docs = write_docs(
        tmp_path / "mydocs", {"page.md": "# Page\n\nThe grommet dial sets tension.\n", "pic.md": b"\x00\x01"}
    )
    added = _cli("kb", "add", str(docs), "--lexical", "--json", data=data_dir)
    assert added.returncode == 0, added.stderr
    report = json.loads(added.stdout)
    assert any("pic.md: binary file" in s for s in report["skipped"])
    answer = json.loads(_cli("ask", "grommet dial tension", "--json", data=data_dir).stdout)
    assert answer["passages"][0]["source"].startswith("mydocs/page.md:3")
    missing = _cli("kb", "add", str(tmp_path / "nope"), data=data_dir)
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_cli_startup_imports_no_heavy_library() -> None:
    code = (
        "import sys, tpu_runtime.cli.app; "
        "print([m for m in ('torch', 'jax', 'chromadb', 'bm25s', 'tokenizers') if m in sys.modules])"
    )
    assert python_output(code) == "[]"
