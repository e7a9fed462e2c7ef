# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A superlative of speed or price ('which sampler runs fastest') asks for a comparison: a line listing the
candidates without comparing them does not answer it, while one stating the comparison in some degree
('faster', 'the fastest') or by its noun ('speed') does. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults
from tpu_runtime.knowledge.question_reading import superlatives_asked
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet samplers

## Gridlet samplers

- Gridlet runs three samplers (alpha, beta and gamma) for drawing bf16 noise on a Gridlet host. ([source](https://example.org/samplers), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet sampler speeds

## Gridlet sampler speeds

- The gamma sampler is the fastest Gridlet sampler for drawing bf16 noise on a Gridlet host. ([source](https://example.org/gamma), checked 2026-12-06)
"""
QUESTION = "Which Gridlet sampler runs fastest when drawing bf16 noise on a Gridlet host?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("superlative-bare"), {"samplers.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("superlative-full"), {"samplers.md": SHEET, "speeds.md": ANSWER}
    )


def test_superlatives_of_speed_and_price_are_asked() -> None:
    assert superlatives_asked(QUESTION) == ["fastest"]
    assert superlatives_asked("What is the cheapest way to get a v5e slice?") == ["cheapest"]
    # 'best' frames many questions ('the best way to ...') and is no comparison of speed or price
    assert superlatives_asked("What is the best way to shard a model?") == []


def test_a_line_states_the_comparison_in_some_degree_or_by_its_noun() -> None:
    lists = "Gridlet runs three samplers: alpha, beta and gamma."
    assert any("fastest" in f for f in span_faults(QUESTION, lists, "Samplers"))
    for line in (
        "The gamma sampler is faster than alpha and beta.",
        "Sampler speed: gamma draws twice as many values as alpha.",
        "Gamma is the fastest sampler.",
    ):
        assert not [f for f in span_faults(QUESTION, line, "Samplers") if "fastest" in f], line


def test_a_line_listing_the_candidates_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "asks which is fastest")


def test_a_line_comparing_them_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "gamma sampler is the fastest")
