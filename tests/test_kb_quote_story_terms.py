# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A specific name told only in the story before the asking clause ('my preemptible G7 node went away
overnight; what status ...') is one the gate lets a quote lack (`unasked_terms`), so ranking does not
discount the answering line for lacking it either: the status line is quoted, not the line restating the
story's G7 node. With the old list (every specific term) the restating line wins, so the test fails
without the step; a G7 asked in the asking clause itself still discounts a line lacking it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.quote_choice import asked_specific
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet nodes

- A preemptible G7 Gridlet node costs less than an on-demand G7 node. ([source](https://example.org/g7), checked 2026-12-07)
- A preempted Gridlet node shows the status RECLAIMED in the Gridlet console until it is deleted. ([source](https://example.org/status), checked 2026-12-07)
"""
STORY = "My preemptible G7 Gridlet node went away overnight; what status does the Gridlet console show for it now?"
ASKED = "What status does the Gridlet console show for a preempted G7 node?"
ANSWER = "status RECLAIMED"
RESTATED = "costs less than an on-demand G7 node"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("story_terms"), {"gridlet.md": SHEET})


def test_the_status_line_is_quoted_for_a_story_naming_the_node(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, STORY, ANSWER)


def test_with_every_specific_term_the_restating_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measure of the test above: a line lacking the story's G7 discounted as before."""
    monkeypatch.setattr(quote_choice, "asked_specific", lambda question, specific: specific)
    assert_quoted(sheet, STORY, RESTATED)


def test_which_terms_a_line_may_lack() -> None:
    assert asked_specific(STORY, ["g7"]) == []
    # asked in the asking clause, or in a question with no story, the name still counts
    assert asked_specific(ASKED, ["g7"]) == ["g7"]
    assert asked_specific(
        "On G7, what status does a preempted Gridlet node show in the console?", ["g7"]
    ) == ["g7"]
