# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The story a question tells before its asking clause ('my script exits after a second, how do I ...')
need not be retold by the answering line: those words are let off in the gate's support share when the
line lacks them, as sentences around the asking one already are. A question whose asking clause names
too little of its own, or that tells the story in the asking clause itself, still needs them. Hand-made
sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.question_reading import clause_asides
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton profiling

## Capturing

- To capture a Frobton trace of a short program by hand, keep the program alive with `time.sleep` while the Frobton capture button is pressed. ([source](https://example.org/capture), checked 2026-12-06)
"""
STORY = "my quorbly wrapper dwindles rapidly and vanishes, how do I capture a Frobton trace of the program by hand?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("clauses"), {"frobton.md": SHEET})


def test_the_clauses_before_the_asking_one_are_the_story() -> None:
    assert clause_asides(STORY) == {"quorbly", "wrapper", "dwindles", "rapidly", "vanishes"}
    # after a semicolon too
    assert "stalls" in clause_asides("the loader stalls; which flag keeps the Frobton capture going?")
    # an asking clause naming fewer than three words of its own leaves the story as the subject
    assert clause_asides("my quorbly wrapper dwindles, why?") == set()
    # one clause: nothing is told apart
    assert clause_asides("How do I capture a Frobton trace when my quorbly wrapper dwindles?") == set()


def test_a_story_the_line_does_not_retell_is_let_off(index: KnowledgeIndex) -> None:
    reply = ask(index, STORY)
    assert reply.covered, reply.reason
    assert "time.sleep" in reply.citations[0].quote
    # the same words inside the asking clause are what it asks about, and the line lacks them
    told = ask(
        index, "how do I capture a Frobton trace of the quorbly wrapper that dwindles rapidly and vanishes?"
    )
    assert not told.covered and "best passage supports" in told.reason, told.reason
