# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A name of several capitalised words ('the Glow Viewer tool') is known only whole: each word may be on
many lines ('glow' of a chip, 'viewer' of another tool), so a line on the chip's glow counters matches
it word by word. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import title_known
from tpu_runtime.knowledge.question_reading import title_names
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobscope tools

## What each Frobscope tool shows

- Frobscope's Trace Viewer draws a timeline of every op the Frobton chip ran. ([source](https://example.org/trace), checked 2026-12-07)
- Glow counters of a Frobton chip come from the `glow_trace_level` key of the capture options in Frobscope; the viewer lists them per run. ([source](https://example.org/glow), checked 2026-12-07)
"""
LATER = """\
# Tiny Frobscope glow viewer

## Glow Viewer

- The Glow Viewer tool of Frobscope sits under the Tools menu of a Frobton run and plots each chip's glow over time. ([source](https://example.org/glow-viewer), checked 2026-12-07)
"""
QUESTION = "Where is the Glow Viewer tool in Frobscope for a Frobton run?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("titles-bare"), {"frobscope.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("titles-full"), {"frobscope.md": SHEET, "glow.md": LATER})


def test_a_title_name_is_two_plain_capitalised_words_in_a_row() -> None:
    assert title_names(QUESTION) == ["Glow Viewer"]
    assert title_names("Can I keep checkpoints in Azure Blob Storage?") == ["Azure Blob Storage"]
    # a sentence's first word, a product's own spelling, an acronym, a number or a quote ends no name
    assert title_names("Trace Viewer: where is it?") == []
    assert title_names("Does FrobScope Viewer exist?") == []
    assert title_names("Is the MaxText Llama recipe on TPU v5e?") == []
    assert title_names("Which GKE Autopilot version do I need?") == []
    assert title_names('What does "Glow Viewer" show, and (Glow Counters) where?') == ["Glow Counters"]


def test_a_title_name_is_known_in_its_usual_spellings(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert title_known(bare, "Trace Viewer")
    assert title_known(bare, "Trace Viewers")  # the plural of a name the sheet writes
    assert not title_known(bare, "Glow Viewer")
    assert title_known(full, "Glow Viewer")


def test_a_line_naming_the_words_apart_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never mention Glow Viewer")


def test_a_name_the_sources_write_whole_answers(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "under the Tools menu")
    # the nearby name the bare sheet writes is still answered there
    assert_quoted(bare, "What does the Trace Viewer tool in Frobscope draw for a Frobton chip?", "timeline")
