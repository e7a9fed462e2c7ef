"""Chunking keeps line numbers and headings, and never emits a passage far over the token budget."""

from __future__ import annotations

from tpu_runtime.knowledge.chunking import (
    MAX_TOKENS,
    chunk_markdown,
    chunk_text,
    estimate_tokens,
    html_to_text,
)


def test_markdown_sections_and_lines() -> None:
    text = (
        "---\ntitle: x\n---\n# Guide\n\nintro line\n\n## Setup\n\nstep one\nstep two\n\n"
        "```bash\n# not a heading\npip install x\n```\n"
    )
    pieces = chunk_markdown(text)
    by_section = {p.section: p for p in pieces}
    assert by_section["Guide"].line == 6
    setup = by_section["Guide › Setup"]
    assert setup.line == 10
    assert "# not a heading" in setup.text  # headings inside code fences stay code
    assert all(p.text.strip() for p in pieces)


def test_long_documents_respect_the_budget() -> None:
    paragraph = " ".join(f"word{i}" for i in range(60))
    text = "# Title\n\n" + "\n\n".join(paragraph for _ in range(40))
    pieces = chunk_markdown(text)
    assert len(pieces) > 5
    assert max(estimate_tokens(p.text) for p in pieces) <= MAX_TOKENS + 10
    lines = [p.line for p in pieces]
    assert lines == sorted(lines) and lines[0] == 3


def test_one_huge_line_is_split_by_words() -> None:
    line = "token " * 5000
    pieces = chunk_text(line)
    assert len(pieces) > 10
    assert max(estimate_tokens(p.text) for p in pieces) <= MAX_TOKENS + 10


def test_identifiers_count_as_several_tokens() -> None:
    assert estimate_tokens("--xla_tpu_enable_latency_hiding_scheduler") > estimate_tokens("the cat")


def test_rst_titles_and_html_text() -> None:
    pieces = chunk_text("Install\n=======\n\nRun pip.\n\nUsage\n-----\n\nCall it.\n")
    assert [p.section for p in pieces] == ["Install", "Usage"]
    text = html_to_text("<html><script>var x=1;</script><p>Hello &amp; <b>bye</b></p></html>")
    assert "Hello & bye" in " ".join(text.split()) and "var x" not in text
