# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question word a passage names in another form counts in the support share (`answer_gate.named_otherwise`):
the 'long' of a 'how long' question is met by a line giving a time ('caches its results for 12 hours'), and a
verb before its particle ('which option cleans them up') by the word the two make joined, as sources name the
thing (`cleanup_stale_shards`). A line giving no time, a particle whose joined word no line writes, and a
'how long can X be' question (a length) are left as they were. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import importlib

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge.answer_gate import _share, named_otherwise
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# the module, not the `answer` function the package exports under the same name
answer = importlib.import_module("tpu_runtime.knowledge.answer")

SHEET = """\
# Tiny Frobton saves

## Save options

- `cleanup_stale_shards` is the Frobton save option that deletes the stale shard files a killed writer leaves. ([source](https://example.org/cleanup), checked 2026-12-07)
- `frob.save(tree, keep=3)` keeps the three newest Frobton saves on disk. ([source](https://example.org/keep), checked 2026-12-07)

## Profiler cache

- The Frobton profiler caches its results for 12 hours; pass `--fresh` to profile again. ([source](https://example.org/cache), checked 2026-12-07)
- The Frobton profiler caches its results until the trace folder changes; pass `--fresh` to profile again. ([source](https://example.org/cache2), checked 2026-12-07)
"""
PHRASAL_QUESTION = "A crashed writer left stale shards behind; which Frobton option cleans them up?"
HOW_LONG_QUESTION = "For how long does the Frobton profiler keep its results?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("named-otherwise"), {"frobton.md": SHEET})


def test_a_verb_before_its_particle_is_named_by_the_joined_word() -> None:
    named = named_otherwise("which option cleans them up?")
    assert named["cleans"].search("`cleanup_stale_shards` deletes them")
    assert named["cleans"].search("two cleanups run")
    assert not named["cleans"].search("it cleans the folder")  # the verb itself is read as before
    assert not named["cleans"].search("a cleanupper")  # a longer word is another word
    # a particle four words after the verb is too far to be its particle
    assert "cleans" not in named_otherwise("which option cleans the old stale shards up?")


def test_how_long_is_named_by_a_time_and_a_length_is_not_asked() -> None:
    assert named_otherwise("For how long does it keep results?")["long"].search("cached for 24 hours")
    assert "long" not in named_otherwise("How long can a prompt be?")
    assert "long" not in named_otherwise("Which long-context model does it serve?")


def test_a_source_notes_digits_give_no_time() -> None:
    weights = {"long": 1.0, "profiler": 1.0}
    named = named_otherwise("How long does the profiler keep results?")
    noted = "The profiler keeps results. ([source](https://example.org/1h), checked 2026-12-07)"
    assert _share(weights, noted, named) == pytest.approx(0.5)
    assert _share(weights, "The profiler keeps results for 1 h.", named) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("question", "expected"),
    [(PHRASAL_QUESTION, "cleanup_stale_shards"), (HOW_LONG_QUESTION, "12 hours")],
)
def test_answered_and_refused_without_the_reading(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch, question: str, expected: str
) -> None:
    assert_quoted(index, question, expected)
    monkeypatch.setattr(answer, "named_otherwise", lambda question: {})
    reply = ask(index, question)
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


@pytest.mark.parametrize(
    "question",
    [
        # a particle whose joined word no line writes
        "A crashed writer left stale shards behind; which Frobton option copies them over?",
        # 'how long' of a thing no line gives a time for (the time check refuses it as well)
        "For how long does the Frobton writer keep stale shards?",
    ],
)
def test_a_nearby_question_is_still_refused(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch, question: str
) -> None:
    reply = ask(index, question)
    assert not reply.covered, reply.reason
    monkeypatch.setattr(answer, "named_otherwise", lambda question: {})
    assert ask(index, question).reason == reply.reason  # the reading changed nothing for it
