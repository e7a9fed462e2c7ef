# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question asking at what scale one choice beats another ('at what scale should I switch to a braid',
'when is a braid better than one big ring') quotes the line giving the size past which it does ('fewer
than 512 nodes') before a line recommending the choice that shares as many of the question's
words in prose. Hand-made sheet on a tiny lexical index; with the bonus off the recommending line is quoted, so
the test fails without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.quote_choice import asks_threshold, gives_condition, gives_threshold
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet braids

- Gridlet recommends a braid when a job is too large for one ring; a braid scales nearly linearly to many rings. ([source](https://example.org/braid), checked 2026-12-06)
- A Gridlet braid scales a job to more than 512 nodes, while a job needing fewer than 512 nodes may run best on one Gridlet ring. ([source](https://example.org/limit), checked 2026-12-06)
"""
SCALE = "At what scale should I switch from one Gridlet ring to a Gridlet braid?"
BETTER = "When is a Gridlet braid better than one big Gridlet ring?"
BOUND = "fewer than 512 nodes"
WORDS = "too large for one ring"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("threshold"), {"gridlet.md": SHEET})


@pytest.mark.parametrize("question", [SCALE, BETTER])
def test_the_line_giving_the_bound_is_quoted(sheet: KnowledgeIndex, question: str) -> None:
    assert_quoted(sheet, question, BOUND)


@pytest.mark.parametrize("question", [SCALE, BETTER])
def test_without_the_bonus_the_recommending_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch, question: str
) -> None:
    """The measure of the test above: with the bonus off (and, for 'when is', a bound not read as a
    condition), the line sharing the question's words in prose is quoted."""
    monkeypatch.setattr(quote_choice, "THRESHOLD_BONUS", 1.0)
    monkeypatch.setattr(quote_choice, "gives_threshold", lambda span: False)
    assert_quoted(sheet, question, WORDS)


def test_which_questions_and_lines_count() -> None:
    assert asks_threshold("At what batch size does int8 pay off?")
    assert asks_threshold("When should I switch to Multislice?")
    assert asks_threshold("When is a braid better than one big ring?")
    assert not asks_threshold("When does a ring get wraparound links?")
    assert not asks_threshold("What scale does the braid reach?")
    assert gives_threshold("a job needing fewer than 512 nodes may run best on one ring")
    assert gives_threshold("rings of 64 nodes or more get wraparound links")
    assert gives_threshold("needs at least 8 hosts")
    assert not gives_threshold("a braid reaches 6,144 nodes")
    assert not gives_threshold("more than one ring ([source](https://example.org/more-than-8))")
    # a bound says when as well as 'when' does
    assert gives_condition("a job needing fewer than 512 nodes may run best on one ring")
