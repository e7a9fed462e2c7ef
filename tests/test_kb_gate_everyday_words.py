# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Everyday words of time, degree and negation in a user's story ('and now every kernel fails too', "the
slice isn't ready yet") name nothing a source repeats: the support share weighs them as it weighs a story's
words, so they no longer count against a covered question; a clipped word meets the word it clips in the
share (a line's 'ops' for 'operations'). A question lacking a content word of its own
is still refused. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.answer_gate import share_weights
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import spelled_out

SHEET = """\
# Tiny Frobton kernels

## Interpret mode

- After one Frobton kernel raises in interpret mode, every later kernel fails until you call `frob.reset_interpreter()`. ([source](https://example.org/reset), checked 2026-12-07)
- The Frobton mover pass sinks reshapes below elementwise ops so that fusion sees them. ([source](https://example.org/mover), checked 2026-12-07)
- A Frobton slice reports the PROVISIONING state while its chips are being handed out. ([source](https://example.org/state), checked 2026-12-07)

## Roofline

- The Frobton roofline keeps the 1000 costliest operations unless `--top_n` is passed. ([source](https://example.org/roofline), checked 2026-12-07)
"""
QUESTION = (
    "My Frobton slice isn't ready yet, chips are still being handed out: which state does it report now?"
)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("everyday-words"), {"frobton.md": SHEET})


def test_everyday_words_weigh_little_in_the_share() -> None:
    weights = share_weights({"now": 2.0, "too": 2.0, "isn": 2.0, "kernel": 2.0})
    assert weights["kernel"] == 2.0
    assert weights["now"] == weights["too"] == weights["isn"] < 0.5


def test_the_story_question_is_answered_and_refused_without_the_rule(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "PROVISIONING")
    monkeypatch.setattr(answer_gate, "EVERYDAY_WORDS", frozenset())
    reply = ask(index, QUESTION)
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


@pytest.mark.parametrize(
    "question",
    [
        "Which call unfreezes a deadlocked Frobton kernel now?",
        "My Frobton slice isn't ready yet; which quota error does it report now?",
    ],
)
def test_a_missing_content_word_is_still_refused(index: KnowledgeIndex, question: str) -> None:
    reply = ask(index, question)
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


def test_clipped_words_are_spelled_out() -> None:
    assert spelled_out("sinks reshapes below elementwise ops") == "operations"
    assert spelled_out("elementwise operations") == "ops"
    assert spelled_out("topology options") == ""  # no clipped word, and 'options' is none


CLIPPED_QUESTION = "Which Frobton pass moves reshapes past elementwise operations?"


def test_operations_meet_the_lines_ops_and_refused_without(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, CLIPPED_QUESTION, "mover pass")
    monkeypatch.setattr(answer_gate, "spelled_out", lambda text: "")
    reply = ask(index, CLIPPED_QUESTION)
    assert not reply.covered and "operations" in reply.reason, reply.reason


def test_operations_alone_do_not_cover_other_missing_words(index: KnowledgeIndex) -> None:
    reply = ask(index, "Which Frobton pass splits transposes across reduction operations?")
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


def test_a_lines_operations_name_the_ops_asked_for(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "How many ops does the Frobton roofline keep unless I pass --top_n?"
    assert_quoted(index, question, "1000 costliest")
    monkeypatch.setattr(answer_gate, "spelled_out", lambda text: "")
    reply = ask(index, question)
    assert not reply.covered and "'ops'" in reply.reason, reply.reason


def test_another_attribute_is_still_refused(index: KnowledgeIndex) -> None:
    reply = ask(index, "How many threads does the Frobton roofline keep unless I pass --top_n?")
    assert not reply.covered and "'threads'" in reply.reason, reply.reason
