# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking for the largest value ('what is the largest trace_steps Gridlet accepts') is not
answered by a line giving only the default ('trace_steps ... (default 5)'): that is the value used when
nothing is set, not the most one may set. Hand-made sheets on a tiny lexical index: refused from such a
line, answered once a line giving the upper bound is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import bound_fault, lower_bound_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet tracing sheet

## Gridlet tracing flags

- Gridlet tracing flags: `tracer` picks the trace format, `trace_steps` sets how many steps each Gridlet trace captures (default 5), and `trace_skip` skips warm-up steps (default 1). ([source](https://example.org/tracing), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet trace limits

## Gridlet trace limits

- The largest `trace_steps` value a Gridlet trace accepts is 50 steps; larger values are rejected. ([source](https://example.org/limits), checked 2026-12-06)
"""
QUESTION = "What is the largest trace_steps value a Gridlet trace accepts?"


def test_a_default_alone_is_a_fault_for_the_largest_value() -> None:
    assert bound_fault(QUESTION, "`trace_steps` sets the steps captured (default 5).")
    for line in (
        "`trace_steps` defaults to 5 and accepts at most 50.",  # an upper bound beside the default
        "`trace_steps` can be set up to 50.",
        "`trace_steps` is 5 for every trace.",  # a plain value: the other checks judge it
    ):
        assert bound_fault(QUESTION, line) is None, line
    # only a question asking for the largest value asks for a bound
    assert bound_fault("What is the default trace_steps value?", "`trace_steps` (default 5)") is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("bound-default-bare"), {"tracing.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("bound-default-full"), {"tracing.md": SHEET, "limits.md": ANSWER}
    )


def test_a_line_giving_only_the_default_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives only a default")


def test_a_line_giving_the_upper_bound_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "is 50 steps")


# the smallest value: the mirror of the largest ('what is the lowest X', a default alone gives no lower bound)
LOW_SHEET = """\
# Tiny Gridlet cache sheet

## Gridlet cache settings

- Gridlet's `cache_share` default of 0.75 keeps a quarter of chip memory free for the runtime; higher values risk running out of memory. ([source](https://example.org/cache), checked 2026-12-07)
"""
LOW_ANSWER = """\
# Gridlet cache limits

## Gridlet cache limits

- Gridlet refuses to start with a `cache_share` below 0.25: the smallest accepted value is 0.25. ([source](https://example.org/cache-limits), checked 2026-12-07)
"""
LOW_QUESTION = "What is the lowest cache_share Gridlet will start with?"


def test_a_default_alone_is_a_fault_for_the_smallest_value() -> None:
    line = "Gridlet's `cache_share` default of 0.75 keeps a quarter of chip memory free; higher values risk overhead."
    assert lower_bound_fault(LOW_QUESTION, line)
    for answered in (
        "`cache_share` defaults to 0.75 and must be at least 0.25.",
        "The smallest accepted `cache_share` is 0.25 (default 0.75).",
        "`cache_share` is 0.75 for every run.",  # a plain value: the other checks judge it
    ):
        assert lower_bound_fault(LOW_QUESTION, answered) is None, answered
    # 'overhead' is no 'over': a word's start gives no bound
    assert lower_bound_fault(LOW_QUESTION, "`cache_share` (default 0.75) leaves room for overhead.")
    # the largest value and the default itself are other questions
    assert lower_bound_fault("What is the largest cache_share Gridlet accepts?", line) is None
    assert lower_bound_fault("What is the default cache_share?", line) is None


@pytest.fixture(scope="module")
def low_bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("lower-bound-bare"), {"cache.md": LOW_SHEET})


@pytest.fixture(scope="module")
def low_full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("lower-bound-full"), {"cache.md": LOW_SHEET, "limits.md": LOW_ANSWER}
    )


def test_a_line_giving_only_the_default_is_refused_for_the_lowest(low_bare: KnowledgeIndex) -> None:
    assert_refused(low_bare, LOW_QUESTION, "smallest value")


def test_a_line_giving_the_lower_bound_answers(low_full: KnowledgeIndex) -> None:
    assert_quoted(low_full, LOW_QUESTION, "smallest accepted value is 0.25")
    # the default is still answered from the default's line
    assert_quoted(low_full, "What is the default cache_share of Gridlet?", "default of 0.75")
