"""The one Markdown quoting helper set: code spans that CommonMark reads back as the value itself."""

from __future__ import annotations

import re

import pytest

from tpu_runtime.cli.render.diagnose.markdown import render_diagnose_markdown
from tpu_runtime.cli.render.markdown_text import md_code, md_fence, md_text
from tpu_runtime.diagnose.report import DiagnoseReport, Finding


def _read_code_span(span: str) -> str:
    """What CommonMark shows for an inline code span: the text between the opening backtick run and the
    first run of exactly the same length, less one space each side when both are there."""
    opening = re.match(r"`+", span)
    assert opening is not None, span
    n = len(opening.group())
    rest = span[n:]
    closing = next(m for m in re.finditer(r"`+", rest) if len(m.group()) == n)
    assert rest[closing.end() :] == "", f"the span closes early: {span!r}"
    content = rest[: closing.start()]
    if len(content) >= 2 and content.startswith(" ") and content.endswith(" ") and content.strip():
        content = content[1:-1]
    return content


@pytest.mark.parametrize("value", ["plain", "a`b", "a``b", "``", "`x`", "x ``` y", "`lead", "trail``"])
def test_code_span_reads_back_as_the_value(value: str) -> None:
    assert _read_code_span(md_code(value)) == value


def test_code_span_escapes_pipes_and_joins_lines() -> None:
    assert md_code("a|b\nc") == "`a\\|b c`"
    assert md_code("  \n ") == ""


def test_text_escapes_emphasis_and_html() -> None:
    assert md_text("*a* <b> [c]") == "\\*a\\* &lt;b&gt; \\[c\\]"


def test_fence_outgrows_backtick_runs_in_the_code() -> None:
    assert md_fence("x = 1\n") == ["```", "x = 1", "```"]
    assert md_fence("````\n", "text")[0] == "`````text"


def test_diagnose_markdown_quotes_a_double_backtick_value_intact() -> None:
    """The diagnose renderer once had its own copy that fenced `x``y` with two backticks: broken Markdown."""
    source = "run``2.log"
    report = DiagnoseReport(
        inputs=[], findings=[Finding(kind="host_sync", severity="high", message="m", source=source)], top=5
    )
    markdown = render_diagnose_markdown(report)
    spans = re.findall(r"`{3}[^`]*(?:`{1,2}[^`]+)*`{3}", markdown)
    assert [_read_code_span(s) for s in spans] == [source]
