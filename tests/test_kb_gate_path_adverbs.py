# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A program named as the subject of a story ('kubectl still shows the slice as DRAINING') is followed by an
adverb, not a subcommand: the path ends before it, so the gate does not refuse the question for a made-up
'kubectl still'. A made-up subcommand right after the program stays unknown. Hand-made sheet on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge import question_reading
from tpu_runtime.knowledge.question_reading import command_paths, is_adverb
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton slices

## Stuck slices

- A Frobton slice stuck in DRAINING is held by its finalizer; free it with `kubectl patch frobslice NAME --type json` removing `/metadata/finalizers`. ([source](https://example.org/stuck), checked 2026-12-07)
- `kubectl describe frobslice NAME` shows a Frobton slice's state and its recent events. ([source](https://example.org/describe), checked 2026-12-07)
"""
QUESTION = "I deleted a Frobton slice and kubectl still shows it as DRAINING; how do I free it?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("path-adverbs"), {"frobton.md": SHEET})


def test_an_adverb_after_the_program_ends_its_path() -> None:
    assert command_paths(QUESTION) == []
    assert command_paths("kubectl suddenly reports the frobslice as DRAINING") == []
    assert command_paths("Does kubectl describe frobslice show the events?") == ["kubectl describe"]
    assert is_adverb("still") and is_adverb("suddenly")
    assert not is_adverb("describe") and not is_adverb("apply")


def test_the_story_question_is_answered_and_refused_without_the_rule(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "/metadata/finalizers")
    monkeypatch.setattr(question_reading, "is_adverb", lambda word: False)
    reply = ask(index, QUESTION)
    assert not reply.covered and "kubectl still" in reply.reason, reply.reason


def test_a_made_up_subcommand_is_still_refused(index: KnowledgeIndex) -> None:
    assert_refused(index, "How do I free a DRAINING Frobton slice with kubectl unstick?", "kubectl unstick")
