# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question put as the user's task and asking what to set ('I need X to act like Y, what do I set?')
quotes the line assigning a value in code before a line that shares more of its words but only describes
the thing. Hand-made sheet on a tiny lexical index; with the bonus off the describing line is quoted, so
the test fails without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import asks_setting
from tpu_runtime.knowledge.quote_choice import gives_assignment
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton sheet

## Twin cores

- In interpret mode a Frobton twin-core chip acts like two corelets. ([source](https://example.org/twin), checked 2026-12-06)
- In Frobton interpret mode, `frob.InterpretParams(corelets_per_device=2)` makes a kernel act like it runs on a twin-core chip's two corelets. ([source](https://example.org/interpret), checked 2026-12-06)
"""
QUESTION = "I need Frobton interpret mode to act like a twin-core chip with two corelets, what do I set?"
SETTING = "corelets_per_device=2"
DESCRIBING = "chip acts like two corelets"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("setting"), {"frobton.md": SHEET})


def test_the_line_assigning_a_value_is_quoted(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, SETTING)


def test_without_the_bonus_the_describing_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "SETTING_BONUS", 1.0)
    assert_quoted(sheet, QUESTION, DESCRIBING)


def test_which_questions_and_lines_count() -> None:
    assert asks_setting("I need Orbax to clean up after a crash, what do I set?")
    assert asks_setting("What should I pass to make it fail on recompiles?")
    assert not asks_setting("What does the twin-core chip set up at start?")
    assert not asks_setting("How do I set the corelet count?")
    assert gives_assignment("`frob.InterpretParams(corelets_per_device=2)` simulates it")
    assert gives_assignment("pass `--corelets 2` on the command line")
    assert gives_assignment("`ENABLE_TWIN_CORES` turns it on")
    assert not gives_assignment("`frob.InterpretParams` holds interpret-mode settings")
    assert not gives_assignment("a twin-core chip has two corelets")
