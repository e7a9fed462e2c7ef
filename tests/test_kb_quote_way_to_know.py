# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""'How does the guide estimate how long X takes?' asks for the way the time is worked out: the line giving
the formula is quoted, not a line that happens to state some duration. Read as a time question, the
formula line lacked a time and paid the fault factor. Hand-made sheet on a tiny lexical index; with
`asks_way_to_know` always False the duration line is quoted, so the first test fails without the rule."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import question_reading
from tpu_runtime.knowledge.question_reading import asks_time, asks_way_to_know
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet estimates sheet

## Estimating step time

- By the Gridlet guide's estimate a 70B model would take about 17 days to train on 18,000 chips. ([source](https://example.org/days), checked 2026-12-06)
- The Gridlet guide estimates how long the math of an operation takes as T_math = its FLOPs divided by the chip's FLOPs/s. ([source](https://example.org/tmath), checked 2026-12-06)
"""
QUESTION = "How does the Gridlet guide estimate how long the math of an operation takes?"
FORMULA = "T_math"
DAYS = "17 days"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("way-to-know"), {"estimates.md": SHEET})


def test_a_way_to_work_out_a_time_quotes_the_formula(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, FORMULA)


def test_read_as_a_time_question_the_duration_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(question_reading, "asks_way_to_know", lambda question: False)
    assert_quoted(sheet, QUESTION, DAYS)


def test_which_questions_ask_for_the_way() -> None:
    assert asks_way_to_know("How does the scaling book estimate how long the math of an operation takes?")
    assert asks_way_to_know("how can I calculate how much HBM my model needs")
    assert not asks_time("How does the scaling book estimate how long the math of an operation takes?")
    # a plain time question, and a how-question whose verb is not one of working a value out, still ask a time
    assert not asks_way_to_know("How long does the export take?")
    assert asks_time("How long does the export take?")
    assert not asks_way_to_know("How do I see how long each step took?")
