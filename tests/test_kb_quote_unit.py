# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question asking an amount per a unit ('int8 ops per byte') quotes the line writing the amount per
that unit ('operations per byte') before a line sharing more of the question's other words that gives a
figure per something else. Hand-made sheet on a tiny lexical index; with the bonus off the other line
ranks first (and the gate, finding no 'per byte' near it, refuses), so the test fails without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.quote_choice import gives_unit, units_asked
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton sheet

## Frobton rooflines

- A Frobton f9 kernel sharded over the mesh becomes link-bound beyond about F/900 ways per axis for int8 kernels, typically 8-way. ([source](https://example.org/links), checked 2026-12-06)
- Critical intensity of int8 matmuls, operations per byte of memory: Frobton f9 about 410, Frobton f7 about 260. ([source](https://example.org/roofline), checked 2026-12-06)
"""
QUESTION = "int8 ops per byte a Frobton f9 kernel needs to be compute bound"
UNIT = "operations per byte"
OTHER = "ways per axis"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("unit"), {"frobton.md": SHEET})


def test_the_line_per_the_unit_asked_is_quoted(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, UNIT)


def test_without_the_bonus_the_other_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "UNIT_BONUS", 1.0)
    reply = ask(sheet, QUESTION)
    assert not reply.covered or OTHER in reply.citations[0].quote
    assert not any(UNIT in c.quote for c in reply.citations)


def test_which_questions_and_lines_count() -> None:
    assert units_asked("int8 ops per byte on f9") == {"byte"}
    assert units_asked("tokens per second per chip") == {"chip"}  # a rate over time is no unit here
    assert units_asked("what does it say per the docs") == set()
    assert units_asked("how fast is a Frobton f9") == set()
    assert gives_unit({"byte"}, "about 410 operations per byte")
    assert gives_unit({"byte"}, "arithmetic intensity in FLOP/byte")
    assert gives_unit({"byte"}, "410 ops per bytes moved")
    assert not gives_unit({"byte"}, "F/900 ways per axis")
    assert not gives_unit({"byte"}, "410 ops ([source](https://example.org/per/byte))")
