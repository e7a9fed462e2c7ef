# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A compound of plain words written with a hyphen ('rounding-up', 'multi-host') is weighed through its
words: tokenizing yields the compound and each word, so counted whole too, a line writing one of its words
otherwise lacked that word twice. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import question_reading
from tpu_runtime.knowledge.question_reading import COMPOUND_WEIGHT, _weights
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton helpers

## Integer helpers

- `frob.cdiv(a, b)` is Frobton's ceiling division of widget counts, for grids that cover a ragged last batch. ([source](https://example.org/cdiv), checked 2026-12-06)
- `frob.floor_mod(a, b)` keeps the sign of the divisor when spreading widget counts over grids. ([source](https://example.org/mod), checked 2026-12-06)

## Hosts

- A Frobton cluster on several hosts starts one agent per host before any widget moves. ([source](https://example.org/hosts), checked 2026-12-06)
"""

QUESTION = "Which Frobton helper does rounding-up division of widget counts?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("compounds"), {"frobton.md": SHEET})


def test_a_plain_compound_weighs_through_its_words(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = "Which Frobton grids hold a frob-a4x widget?"
    weights, name_weights = _weights(index, QUESTION), _weights(index, named)
    monkeypatch.setattr(question_reading, "COMPOUND_WEIGHT", 1.0)
    whole, name_whole = _weights(index, QUESTION), _weights(index, named)
    assert COMPOUND_WEIGHT < 1
    assert weights["rounding-up"] == pytest.approx(COMPOUND_WEIGHT * whole["rounding-up"])
    assert weights["rounding"] == pytest.approx(whole["rounding"])
    # a compound with a digit is a name, weighed whole
    assert name_weights["frob-a4x"] == pytest.approx(name_whole["frob-a4x"])


def test_a_line_writing_a_word_of_the_compound_otherwise_answers(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "frob.cdiv")
    # weighed whole, the compound and its word are both missing from the line: the gate refused
    monkeypatch.setattr(question_reading, "COMPOUND_WEIGHT", 1.0)
    reply = ask(index, QUESTION)
    assert not reply.covered and "supports" in reply.reason, reply.reason


def test_another_operation_beside_the_same_compound_is_still_refused(index: KnowledgeIndex) -> None:
    # the compound's words are missing and so is the operation: another question
    reply = ask(index, "Which Frobton helper does rounding-up hashing of widget counts?")
    assert not reply.covered, reply.answer
