# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A one-letter name ('an R training loop') is dropped by tokenising, so the support share never sees it:
a line about a Python training loop shares every other word and does not answer the question. The
quoted passage must name the letter on its own; a series of letters ('the Q, K, V and O projections') is
a notation that sources spell out and is not held. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.question_reading import letter_names
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet profiling sheet

## Gridlet step markers

- In a Python training loop, mark each step with `gridlet.step_marker(step)` so the Gridlet profiler sees step boundaries. ([source](https://example.org/python), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet from R

## Gridlet from R

- In an R training loop, mark each step with `gridlet_step_marker(step)` so the Gridlet profiler sees step boundaries. ([source](https://example.org/r), checked 2026-12-06)
"""
QUESTION = "How do I mark step boundaries in an R training loop for the Gridlet profiler?"


def test_one_letter_names_are_read_on_their_own() -> None:
    assert letter_names(QUESTION) == {"R"}
    assert letter_names("the Q, K, V and O projections") == {"Q", "K", "V", "O"}
    # 'I' and 'A' open sentences; 'C' of 'C++' and letters inside code or names are no such name
    assert letter_names("Can I write a C++ kernel for x.T in `R`?") == set()


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("letter-bare"), {"python.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("letter-full"), {"python.md": SHEET, "r.md": ANSWER})


def test_a_passage_never_naming_the_letter_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never names R")


def test_a_passage_naming_the_letter_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "In an R training loop")


def test_a_series_of_letters_is_not_held(bare: KnowledgeIndex) -> None:
    question = (
        "How do I mark step boundaries for the Gridlet profiler in a Python training loop with Q, K and V?"
    )
    assert_quoted(bare, question, "Python training loop")
