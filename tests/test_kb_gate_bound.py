# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking for the largest value ('what is the largest priority Gridlet accepts') wants an
upper bound: a line stating only a lower one ('is 0 or more', 'at least one') gives where the range
starts, not where it ends. Hand-made sheets on a tiny lexical index: refused from such a line, answered
once a line giving the upper bound is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import bound_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sharding sheet

## Gridlet shard priorities

- A Gridlet shard accepts a priority value from user annotations that is 0 or more; a lower value runs first and the greatest runs last. ([source](https://example.org/priority), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet priority range

## Gridlet priority range

- A Gridlet shard accepts a priority value of at most 15; larger values are rejected. ([source](https://example.org/range), checked 2026-12-06)
"""
QUESTION = "What is the largest priority value a Gridlet shard accepts?"


def test_a_lower_bound_alone_is_a_fault_for_the_largest_value() -> None:
    assert bound_fault(QUESTION, "The priority is 0 or more.")
    assert bound_fault(QUESTION, "Each shard needs at least one axis.")
    for line in (
        "The priority is 0 or more and at most 15.",
        "Priorities run from 0 up to 15.",
        "The priority is 7 for every shard.",
    ):
        assert bound_fault(QUESTION, line) is None, line
    # a question asking for the smallest value is answered by a lower bound
    assert bound_fault("What is the minimum Gridlet version?", "Gridlet 2.1 or higher") is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("bound-bare"), {"priority.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("bound-full"), {"priority.md": SHEET, "range.md": ANSWER})


def test_a_line_giving_a_lower_bound_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives only a lower bound")


def test_a_line_giving_the_upper_bound_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "at most 15")
