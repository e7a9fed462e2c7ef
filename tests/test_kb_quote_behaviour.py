# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A "how do I" question asking how to make a program behave otherwise ('how do I tell Frobton where to keep
...', 'how do I make frob raise ...') quotes the line assigning a value in code before a line that shares
more of its words but only describes the thing: its causative verb names no action a line's code could
name. Hand-made sheet on a tiny lexical index; with the bonus off the describing line is quoted, so the
test fails without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import asks_behaviour
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton sheet

## Compile cache

- Frobton keeps compiled programs in a persistent cache between runs, so a new launch skips recompiling. ([source](https://example.org/caches), checked 2026-12-07)
- Frobton can keep compiled programs on disk between runs: call `frob.config.update("frob_cache_dir", DIR)` (or set `FROB_CACHE_DIR`) before the first compile. ([source](https://example.org/cache-dir), checked 2026-12-07)
"""
QUESTION = "How do I tell Frobton where to keep compiled programs between runs so it stops recompiling?"
SETTING = "frob_cache_dir"
DESCRIBING = "in a persistent cache between runs"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("behaviour"), {"frobton.md": SHEET})


def test_the_line_assigning_a_value_is_quoted(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, SETTING)


def test_without_the_bonus_the_describing_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "SETTING_BONUS", 1.0)
    assert_quoted(sheet, QUESTION, DESCRIBING)


def test_which_questions_count() -> None:
    assert asks_behaviour("How do I tell JAX where to keep compiled programs?")
    assert asks_behaviour("how do I make jnp refuse to broadcast arrays of another rank")
    assert asks_behaviour("How can I get PyTorch/XLA to explain why it recompiles?")
    assert not asks_behaviour("How can I tell whether my TPU has been preempted?")
    assert not asks_behaviour("How do I get a profile of my job?")
    assert not asks_behaviour("My slice is stuck; how do I force its deletion?")
    assert not asks_behaviour("How do I install Frobton?")
    assert not asks_behaviour("What do I tell Frobton to keep?")
