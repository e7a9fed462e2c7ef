# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The verb of a phrasal verb ('it came up') weighs little in the support share (`answer_gate.phrasal_weights`):
the pair means what a line names in its own word ('its creation'), so the verb alone is no word a source must
write. A plain verb ('rebooted'), a verb before another word ('came online'), a compound ('rounding-up') and a
preposition ('priority over another') are left as they were. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import importlib

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge.answer_gate import phrasal_verbs, phrasal_weights
from tpu_runtime.knowledge.question_reading import ASIDE_WEIGHT
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# the module, not the `answer` function the package exports under the same name
answer = importlib.import_module("tpu_runtime.knowledge.answer")

SHEET = """\
# Tiny Frobton nodes

## Billing

- A Frobton node deleted within the first minute of its creation is not charged. ([source](https://example.org/bill), checked 2026-12-07)
- Frobton nodes are billed per second once running. ([source](https://example.org/sec), checked 2026-12-07)

## Pools

- A Frobton pool hands each job its nodes in the order the jobs were queued. ([source](https://example.org/pool), checked 2026-12-07)
"""
PHRASAL_QUESTION = "My Frobton node was deleted seconds after it came up; is it charged?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("phrasal"), {"frobton.md": SHEET})


def test_the_verb_before_a_particle_is_read() -> None:
    assert phrasal_verbs("seconds after it came up, will I be billed?") == {"came"}
    assert phrasal_verbs("the chips are being handed out") == {"handed"}
    assert phrasal_verbs("it came online") == set()  # no particle
    assert phrasal_verbs("a rounding-up division") == set()  # a hyphen makes a compound
    assert phrasal_verbs("priority over another queued resource") == set()  # 'over' is left out
    assert phrasal_verbs("how do I set up a VM") == set()  # a question word is never weighed
    assert phrasal_verbs("why is it up?") == set()  # 'is' is no verb to weigh


def test_only_the_verb_weighs_less_and_none_without_one() -> None:
    weights = {"came": 2.0, "out": 1.0, "billed": 3.0}
    assert phrasal_weights("it came out; is it billed?", weights) == {
        "came": pytest.approx(2.0 * ASIDE_WEIGHT),
        "out": 1.0,  # the particle keeps its weight
        "billed": 3.0,
    }
    assert phrasal_weights("is it billed?", weights) is None


def test_answered_and_refused_without_the_reading(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, PHRASAL_QUESTION, "first minute of its creation")
    monkeypatch.setattr(answer, "phrasal_weights", lambda question, weights: None)
    reply = ask(index, PHRASAL_QUESTION)
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


@pytest.mark.parametrize(
    "question",
    [
        # a plain verb the line does not write
        "My Frobton node was deleted seconds after it rebooted; is it charged?",
        # the same verb before another word than a particle
        "My Frobton node was deleted seconds after it came online; is it charged?",
    ],
)
def test_a_nearby_question_is_still_refused(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch, question: str
) -> None:
    reply = ask(index, question)
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason
    monkeypatch.setattr(answer, "phrasal_weights", lambda question, weights: None)
    assert ask(index, question).reason == reply.reason  # the reading changed nothing for it
