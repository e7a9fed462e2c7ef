# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A word value the question assigns to an option ('GRIDLET_MODE=turbo') is a name, like a flag: one that
no source mentions makes the question not covered, though the option's own line shares every other word.
Hand-made sheets on a tiny lexical index: refused from the option's line alone, answered once a line
naming the value is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.question_reading import assigned_values
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet environment variables

- `GRIDLET_MODE` selects the Gridlet backend: `auto` (the default), `fast` or `safe`. ([source](https://example.org/mode), checked 2026-12-05)
"""
TURBO = """\
# Gridlet turbo

## Gridlet turbo

- `GRIDLET_MODE=turbo` selects the experimental Gridlet backend that skips safety checks. ([source](https://example.org/turbo), checked 2026-12-05)
"""
QUESTION = "What does GRIDLET_MODE=turbo select in Gridlet?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("assigned-bare"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("assigned-full"), {"gridlet.md": SHEET, "turbo.md": TURBO})


def test_word_values_assigned_to_a_name_are_read() -> None:
    assert assigned_values(QUESTION) == ["turbo"]
    assert assigned_values('What does load_format="Turbo" do?') == ["turbo"]
    # a number is an amount, not a name; '==' in prose assigns nothing to a name
    assert assigned_values("Is GRIDLET_RATE=5 too high?") == []
    assert assigned_values("How do I pick a backend?") == []


def test_a_value_no_source_mentions_is_not_covered(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never mention =turbo")


def test_a_value_of_the_option_some_line_names_is_answered(bare: KnowledgeIndex) -> None:
    assert_quoted(bare, "What does GRIDLET_MODE=safe select in Gridlet?", "`safe`")


def test_the_line_naming_the_value_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "experimental")
