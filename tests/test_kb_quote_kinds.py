# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question asking which kinds of something there are ('what kinds of semaphores can a kernel
allocate') quotes the line listing them before a line that shares more of its words but uses one kind.
Hand-made sheet on a tiny lexical index; with the bonus off the other line is quoted, so the test fails
without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import asks_kinds
from tpu_runtime.knowledge.quote_choice import gives_list
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet kernel sheet

## Gridlet semaphores

- `MemorySpace.GRIDLET` lets a Gridlet kernel allocate semaphores, for barriers or for tracking asynchronous copies. ([source](https://example.org/space), checked 2026-12-06)
- `gridlet.SemaphoreType` has REGULAR, DMA and BARRIER members; calling one allocates semaphores. ([source](https://example.org/types), checked 2026-12-06)
"""
QUESTION = "What kinds of semaphores can a Gridlet kernel allocate?"
SPACE = "MemorySpace.GRIDLET"
TYPES = "REGULAR, DMA and BARRIER"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("kinds"), {"gridlet.md": SHEET})


def test_the_line_listing_the_kinds_is_quoted(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, TYPES)


def test_without_the_bonus_the_line_sharing_more_words_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "LIST_BONUS", 1.0)
    assert_quoted(sheet, QUESTION, SPACE)


def test_a_question_not_asking_kinds_keeps_the_other_line(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, "How can a Gridlet kernel allocate semaphores for barriers?", SPACE)


def test_kinds_asked_and_lists_given() -> None:
    assert asks_kinds(QUESTION) and asks_kinds("Which semaphore types does Pallas offer?")
    # 'type' inside the question, not what it asks for
    assert not asks_kinds("How do I pick the semaphore type for a DMA?")
    # a singular type asks for one name
    assert not asks_kinds("Which GKE machine type gives a single chip?") and asks_kinds(
        "What type of core is it?"
    )
    assert gives_list("It has REGULAR, DMA and BARRIER members.")
    assert gives_list("Use `a`, `b`, or `c`.")
    # two items are a choice, not a list of kinds
    assert not gives_list("semaphores for barriers or for tracking asynchronous copies")
    assert not gives_list("lets a kernel allocate semaphores, for barriers or for tracking copies")
