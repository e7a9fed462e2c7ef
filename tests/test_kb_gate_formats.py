# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking for something to be written in a file format ('export the timeline as an SVG') is
not answered by a line on the same view that never names that format: the view's other features, or its
export in another format, do not say the one asked about is offered. Hand-made sheets on a tiny lexical
index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import format_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet viewer sheet

## Gridlet timeline viewer

- The Gridlet timeline viewer's search box finds events only in the time window on screen, and its export button saves the timeline window as a CSV table. ([source](https://example.org/timeline), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet timeline export

## Gridlet timeline export

- The Gridlet timeline viewer can also export the time window on screen as an SVG drawing. ([source](https://example.org/svg), checked 2026-12-06)
"""
QUESTION = "Can the Gridlet timeline viewer export the time window on screen as an SVG?"


def test_the_format_asked_for_must_be_named() -> None:
    line = "The export button saves the timeline window as a CSV table."
    assert format_fault(QUESTION, line, "Gridlet timeline viewer")
    assert format_fault(QUESTION, "It exports the window as SVG.", "") is None
    assert format_fault("How do I save the timeline to CSV?", line, "") is None
    # a format naming the file a field is in is not what is asked for
    assert format_fault("In a Gridlet YAML, which field sets the bucket?", "`bucketDir` sets it.", "") is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("formats-bare"), {"viewer.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("formats-full"), {"viewer.md": SHEET, "export.md": ANSWER})


def test_a_line_on_another_format_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never names svg")


def test_a_line_naming_the_format_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "as an SVG drawing")
