# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'What is the X (used) for?' asks what X serves: X is the question's subject, not an attribute the
quoted line must name, so the line on X answers it without repeating the word 'setting'. A question
that only contains the same words but ends elsewhere keeps the focus check. Hand-made sheet on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults
from tpu_runtime.knowledge.question_reading import focus_term
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet serving sheet

## Gridlet server flags

- On a Gridlet server, `--slot-count` is the number of concurrent decode slots: raising it reserves memory for more requests at once. ([source](https://example.org/slots), checked 2026-12-06)
- Gridlet recipe settings for serving: `--batch-tokens 2048` when prefill-heavy and 512 otherwise. ([source](https://example.org/recipe), checked 2026-12-06)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("purpose"), {"gridlet.md": SHEET})


def test_a_purpose_question_asks_for_no_attribute() -> None:
    assert focus_term("When serving with Gridlet, what is the --slot-count setting for?") is None
    assert focus_term("What is the --slot-count setting used for?") is None
    # the same words asking for the setting of something keep it as the attribute asked for
    assert focus_term("What is the --slot-count setting of the Gridlet recipe?") == "setting"
    assert focus_term("What is the clock speed for a v5e chip?") == "clock"


def test_the_line_on_the_subject_answers_what_it_is_for(index: KnowledgeIndex) -> None:
    question = "When serving with Gridlet, what is the --slot-count setting for?"
    line = "On a Gridlet server, `--slot-count` is the number of concurrent decode slots"
    assert not span_faults(question, line, "Gridlet server flags")
    assert_quoted(index, question, "concurrent decode slots")


def test_a_line_lacking_the_attribute_asked_for_is_still_refused(index: KnowledgeIndex) -> None:
    # the same opening asking for an attribute of the flag, not what it is for: the line on the flag
    # gives no such attribute, so the question is refused
    question = "When serving with Gridlet, what is the --slot-count ceiling?"
    assert focus_term(question) == "ceiling"
    assert_refused(index, question, "ceiling")
