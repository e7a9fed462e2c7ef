# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A `--flag` the question asks about must be named by the quoted passage in some spelling: 'what does
Gridlet's --spare-slices flag do?' is not answered by Gridlet's flags overview when only another tool's sheet
names `--spare-slices`. Hand-made sheets on a tiny lexical index: refused from the overview, answered once
a Gridlet line names the flag."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import flag_passage_fault
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

OVERVIEW = """\
# Tiny Gridlet serving sheet

## Gridlet launch flags reference

- Gridlet's launch flags reference covers the 30 flags its recipes use; each flag's default comes from the server's argument parser. ([source](https://example.org/gridlet-flags), checked 2026-12-07)
"""
OTHER_TOOL = """\
# Tiny Slicer sheet

## Slicer elastic workloads

- Slicer's `slicer workload create` takes `--spare-slices`, how many slices a job may lose and keep running. ([source](https://example.org/slicer), checked 2026-12-07)
"""
GRIDLET_FLAG = """\
# Gridlet spare slices

## Gridlet spare slices flag

- Gridlet's `--spare-slices` flag keeps that many idle slices warm so a failed slice is replaced at once. ([source](https://example.org/gridlet-spare), checked 2026-12-07)
"""
QUESTION = "What does Gridlet's --spare-slices flag do?"


def _passage(text: str, section: str = "Gridlet flags") -> Passage:
    return Passage(
        chunk_id="c1",
        source="grid.md",
        path="grid.md",
        line=1,
        kind="curated",
        text=text,
        section=section,
        score=1.0,
    )


def test_a_flag_the_passage_never_names_is_a_fault() -> None:
    assert flag_passage_fault(QUESTION, _passage("Gridlet's launch flags reference covers 30 flags."))
    # any spelling of the name: dashed, snake_case, camelCase, in the heading or the text
    for text, section in (
        ("Gridlet takes `--spare-slices N`.", "Gridlet flags"),
        ("Gridlet's `spare_slices` setting keeps idle slices.", "Gridlet flags"),
        ("Set `spareSlices` in the Gridlet config.", "Gridlet flags"),
        ("It keeps idle slices warm.", "Gridlet › --spare-slices"),
    ):
        assert flag_passage_fault(QUESTION, _passage(text, section)) is None, text
    # a longer flag holding the name is another flag
    assert flag_passage_fault(QUESTION, _passage("Gridlet takes `--max-spare-slices-count`."))
    # a flag written only in the story before the asking clause is not what is asked about
    story = "I passed --spare-slices to Gridlet and it was rejected; which Gridlet serving option keeps idle slices warm now?"
    assert flag_passage_fault(story, _passage("Gridlet's launch flags reference covers 30 flags.")) is None
    assert (
        flag_passage_fault("What does Gridlet's spare slices setting do?", _passage("No flags here.")) is None
    )


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("flag-passage-bare"), {"gridlet.md": OVERVIEW, "slicer.md": OTHER_TOOL}
    )


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("flag-passage-full"),
        {"gridlet.md": OVERVIEW, "slicer.md": OTHER_TOOL, "spare.md": GRIDLET_FLAG},
    )


def test_the_overview_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never names --spare-slices")


def test_a_line_naming_the_flag_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "keeps that many idle slices warm")
