# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A default and a count given by 'one' belong to what stands beside them: a line whose only default is
said of something else ('unset columns read as NULL' for a query's time limit), or whose only count is a
'one' counting something else ('tickets that fix one bug' for how many tickets, 'one static program' for
what upper bound a compiler uses), does not answer the question. Hand-made sheets on a tiny lexical index: refused from such lines, answered once the line giving
the value is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import amount_fault, span_faults, weak_count_only
from tpu_runtime.knowledge.question_reading import asks_amount
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet queries

- A Gridlet query has a time limit set per run; unset columns read as NULL. ([source](https://example.org/query), checked 2026-12-06)

## Gridlet maintainers

- Gridlet asks each maintainer to hold open tickets that fix one bug at a time. ([source](https://example.org/maintainers), checked 2026-12-06)

## Gridlet compiler

- The Gridlet compiler replaces each sequence length with its upper bound and pads the inputs, so one static program serves every length with no hint. ([source](https://example.org/compiler), checked 2026-12-06)
"""
ANSWERS = """\
# Gridlet limits

## Gridlet limits

- A Gridlet query stops at its time limit of 300 seconds by default. ([source](https://example.org/limit), checked 2026-12-06)
- A Gridlet maintainer may hold at most three open tickets at a time. ([source](https://example.org/tickets), checked 2026-12-06)
- The Gridlet compiler uses an upper bound of 4096 for a sequence length with no hint. ([source](https://example.org/bound), checked 2026-12-06)
"""
DEFAULT = "What is the default time limit for a Gridlet query?"
COUNT = "How many open tickets may one Gridlet maintainer hold at a time?"
AMOUNT = "What upper bound does the Gridlet compiler use for a sequence length with no hint?"
CASES = [
    (DEFAULT, "300 seconds", "gives one only for something else"),
    (COUNT, "three open tickets", "only 'one' counts something else"),
    (AMOUNT, "4096", "gives no number for it"),
]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("beside-bare"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("beside-full"), {"gridlet.md": SHEET, "limits.md": ANSWERS})


def _faults(question: str, line: str) -> list[str]:
    return span_faults(question, line, "Gridlet")


def test_a_default_stated_of_something_else_is_a_fault() -> None:
    assert any(
        "something else" in f
        for f in _faults(DEFAULT, "A Gridlet query reads an events table whose unset columns read as NULL.")
    )
    # stated beside the thing asked about, or in the word itself, it answers
    assert not _faults(DEFAULT, "A Gridlet query's time limit is 300 seconds unless set otherwise.")
    assert not _faults(DEFAULT, "A Gridlet query's time limit defaults to 300 seconds.")


def test_a_lone_one_counts_only_beside_a_word_of_the_question() -> None:
    stray = "Gridlet asks each maintainer to fix one bug per ticket."
    assert weak_count_only(COUNT, stray)
    assert any("'one'" in f for f in _faults(COUNT, stray))
    # beside a word of the question ('holds one open ticket'), or with another count in the line
    assert not weak_count_only(COUNT, "Each Gridlet maintainer holds one open ticket at a time.")
    assert not weak_count_only(COUNT, "A maintainer fixes one bug and may hold two open tickets.")
    # a question asking no count is left alone
    assert not [f for f in _faults("Who reviews Gridlet tickets?", stray) if "'one'" in f]


def test_an_amount_asked_for_needs_a_number_of_its_own() -> None:
    assert asks_amount(AMOUNT)
    assert asks_amount("What is the score of the nightly Gridlet baseline?")
    assert not asks_amount("What does the Gridlet compiler do with a sequence length?")
    stray = "The Gridlet compiler pads each length to its upper bound and its inputs, so one static program serves all."
    assert amount_fault(AMOUNT, stray)
    assert amount_fault(AMOUNT, "The Gridlet compiler pads each length to its upper bound.")
    assert amount_fault(AMOUNT, "The Gridlet compiler uses an upper bound of 4096 tokens.") is None
    # 'what is the largest X' is a limit, left to the limit check
    assert amount_fault("What is the largest bound Gridlet accepts?", stray) is None


@pytest.mark.parametrize(("question", "expected", "because"), CASES)
def test_a_line_giving_the_value_beside_what_is_asked_answers(
    full: KnowledgeIndex, question: str, expected: str, because: str
) -> None:
    assert_quoted(full, question, expected)


@pytest.mark.parametrize(("question", "expected", "because"), CASES)
def test_a_line_giving_it_for_something_else_is_refused(
    bare: KnowledgeIndex, question: str, expected: str, because: str
) -> None:
    assert_refused(bare, question, because)
