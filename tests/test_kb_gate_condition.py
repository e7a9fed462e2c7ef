# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A 'when does X ...' question asks under which condition X happens: among lines sharing its words, one
stating a condition ('when', 'if', 'unless') is quoted before one that only describes X, as a line
stating a cause is for a 'why' question. A 'when will X' question asks for a date, which no condition
gives. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import asks_condition
from tpu_runtime.knowledge.quote_choice import gives_condition
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet ring sheet

## Gridlet rings

- A Gridlet ring of 64 nodes is a 3D mesh: each node links to its nearest neighbours in all three dimensions. ([source](https://example.org/mesh), checked 2026-12-06)
- A Gridlet ring has wraparound links when every side is a multiple of 4. ([source](https://example.org/torus), checked 2026-12-06)
"""
QUESTION = "When does a Gridlet ring get wraparound links in all three dimensions?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("condition"), {"gridlet.md": SHEET})


def test_the_line_stating_the_condition_is_quoted(index: KnowledgeIndex) -> None:
    assert_quoted(index, QUESTION, "multiple of 4")


def test_without_the_bonus_the_describing_line_wins(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measure of the test above: with the bonus off, the line sharing more words is quoted."""
    monkeypatch.setattr(quote_choice, "CONDITION_BONUS", 1.0)
    reply = ask(index, QUESTION)
    assert reply.covered and "3D mesh" in reply.citations[0].quote


def test_a_question_asking_for_a_date_is_still_refused(index: KnowledgeIndex) -> None:
    question = "When will Gridlet rings get wraparound links in all three dimensions?"
    assert not asks_condition(question)
    assert_refused(index, question, "no date or version")


def test_what_asks_and_gives_a_condition() -> None:
    assert asks_condition("When is a sharding fully addressable?")
    assert asks_condition("when do I have to set XLA_FLAGS?")
    assert not asks_condition("When will JAX support v9?")
    assert not asks_condition("How do I get wraparound links?")
    assert gives_condition("Links wrap around only if every side is a multiple of 4.")
    assert not gives_condition("Each node links to its neighbours in three dimensions.")
    # a source note's words are no condition
    assert not gives_condition(
        "Nodes link in three dimensions ([source](https://example.org/when-if), checked 2026-12-06)."
    )
