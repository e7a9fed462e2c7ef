# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question asking a name in code (a tool, call, flag or command) whose best line only restates the
question's own names in code (a log line quoted back, the module it imports) quotes the next line of that
sheet's section when that line writes a new name: the sheet states the situation in one bullet and names the
tool in the next, which shares fewer of the question's words. Hand-made sheets on a tiny lexical index; with
the reading off the restating line is quoted, so the test fails without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.answer_gate import _terms
from tpu_runtime.knowledge.quote_choice import asks_code, new_code
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton sheet

## Warm tiles

- Frobton kernels pick tile sizes from a table of warm tiles that a tool builds; Frobton warns with the log line `Couldn't find warm tiles for key...` when a kernel falls back to cold tile sizes for that shape. ([source](https://example.org/warm), checked 2026-12-07)
- Frobton's autotuner is the `frob-warm` command: `frob-warm matmul --sizes 16` benchmarks tile sizes on the chip and saves them to the table. ([source](https://example.org/tuner), checked 2026-12-07)

## Glow counters

- Frobton reports glow counters through `frob.debug.glow` (imported as `glow`), counting every kernel launch. ([source](https://example.org/glow), checked 2026-12-07)

## Glow reports

- `glow.full_report()` returns a text report of every glow counter with its samples. ([source](https://example.org/report), checked 2026-12-07)
"""
TOOL_QUESTION = "Frobton warns it couldn't find warm tiles for a kernel key; which tool builds them?"
RESTATING = "warns with the log line `Couldn't find warm tiles for key...`"
NAMING = "`frob-warm` command"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("next_line"), {"frobton.md": SHEET})


def test_the_next_line_naming_the_tool_is_quoted(sheet: KnowledgeIndex) -> None:
    reply = assert_quoted(sheet, TOOL_QUESTION, NAMING)
    # it takes the restating line's place: no line is added beside it
    assert all(RESTATING not in c.quote for c in reply.citations)


def test_with_the_reading_off_the_restating_line_is_quoted(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "NEXT_LINE_ANSWER", False)
    assert_quoted(sheet, TOOL_QUESTION, RESTATING)


def test_a_question_asking_no_name_keeps_the_first_line(sheet: KnowledgeIndex) -> None:
    assert_quoted(
        sheet, "What does it mean when Frobton couldn't find warm tiles for a kernel key?", RESTATING
    )


def test_a_line_of_another_section_is_not_the_next_line(sheet: KnowledgeIndex) -> None:
    # the call sits in the next bullet of the file, but under another heading: the first line stays
    reply = ask(sheet, "import frob.debug.glow as glow: what do I call then to count every kernel launch?")
    assert reply.covered, reply.reason
    assert "`frob.debug.glow`" in reply.citations[0].quote
    assert all("full_report" not in c.quote for c in reply.citations)


def test_which_questions_ask_a_name_in_code() -> None:
    assert asks_code("Frobton warns about cold tiles; which tool builds them?")
    assert asks_code("import frob.debug.glow as glow: what do I call then to print it all?")
    assert asks_code("Which flag picks the tile table?")
    assert asks_code("I need Frobton to stop on cold tiles, what do I set?")
    assert not asks_code("What does the warm tile table hold?")
    assert not asks_code("Why does Frobton fall back to cold tiles?")


def test_which_code_is_new_to_the_question() -> None:
    asked = _terms("Frobton warns it couldn't find warm tiles for a kernel key; which tool builds them?")
    assert not new_code(asked, "the log line `Couldn't find warm tiles for key...` means a fallback")
    assert not new_code(asked, "no code at all, only a new word: autotuner")
    assert new_code(asked, "the `frob-warm` command builds them")
    # a joined name made of the question's words is still a name the question does not write
    flag = _terms("Which flag picks the warm tile table?")
    assert new_code(flag, "`--warm_tile_table` picks it")
    assert not new_code(flag, "`warm` and `tile` are words of the question")
    # a source note's link is no code of the line
    assert not new_code(
        asked, "Couldn't find warm tiles ([source](https://example.org/frob-warm), checked 2026-12-07)"
    )
