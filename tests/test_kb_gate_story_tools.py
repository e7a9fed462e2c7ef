"""A program named only in the story before the asking clause ('... with gcloud and passed --size=4, but it
isn't accepted; which flag goes in its place?') is where the user met the problem, not what the question
asks of: the tool check no longer wants it named by the quoted line. A tool the asking clause names, or a
question without a story, still does."""

from __future__ import annotations

import pytest

from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.answer_gate import tool_fault

LINE = "Frobton pools take --frob-topology where older pools took --size."


STORY = (
    "I'm creating a Frobton pool with gcloud and passed --size=4 the way I always do, "
    "but it isn't accepted; which flag goes in its place?"
)


def test_a_tool_named_only_in_the_story_is_not_asked_of(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tool_fault(STORY, LINE) is None
    monkeypatch.setattr(answer_gate, "clause_asides", lambda question: set())  # the story read as asked
    assert "gcloud" in str(tool_fault(STORY, LINE))


def test_a_tool_the_asking_clause_names_is_still_wanted() -> None:
    story = (
        "I passed --size=4 to a Frobton pool the way I always do, but it isn't accepted; "
        "which gcloud flag goes in its place?"
    )
    assert "gcloud" in str(tool_fault(story, LINE))
    plain = "Which gcloud flag replaces --size for a Frobton pool?"
    assert "gcloud" in str(tool_fault(plain, LINE))
    assert tool_fault(plain, "Run `gcloud frobton pools create --frob-topology=4`.") is None
