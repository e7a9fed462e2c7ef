"""In a near tie, a close line of another section takes a runner-up's place before a closer line of the
first line's own section: a sheet's section often restates one fact in several lines, so the reader gains
more from the other section's line. Lines under the share, or after a line the checks refuse, stay out."""

# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_helpers import lexical_index, quote_span
from tpu_runtime.knowledge.answer_gate import Span
from tpu_runtime.knowledge.quote_choice import RUNNER_UP_SHARE, other_sections_first, runner_ups
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny accelerator sheet

## Sparse units

- Sparse units suit irregular work with random memory access. ([source](https://example.org/a), checked 2026-12-06)
"""

QUESTION = "What do sparse units accelerate?"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("sections")), {"units.md": SHEET})


def _span(text: str, overlap: float, line: int, section: str, path: str = "units.md") -> Span:
    return quote_span(text, overlap, line, section, path)


FIRST = _span("Sparse units suit irregular work with random memory access.", 1.0, 3, "Sparse units")
SAME_A = _span(
    "Sparse units specialise in sparse memory access beside the main cores.", 0.97, 4, "Sparse units"
)
SAME_B = _span("Sparse units come four to a chip on the older generations.", 0.95, 5, "Sparse units")
OTHER = _span(
    "Sparse units accelerate large embedding tables for recommendation models.", 0.93, 9, "Chips", "chips.md"
)


def test_a_close_line_of_another_section_takes_a_place_before_the_own_sections_third(
    sheet: KnowledgeIndex,
) -> None:
    # the own section's closest line keeps its place; the other section's line takes the second, in rank order
    assert runner_ups(sheet, QUESTION, [FIRST, SAME_A, SAME_B, OTHER], [], [], []) == [SAME_A, OTHER]


def test_lines_of_the_first_lines_section_alone_keep_their_rank_order(sheet: KnowledgeIndex) -> None:
    assert runner_ups(sheet, QUESTION, [FIRST, SAME_A, SAME_B], [], [], []) == [SAME_A, SAME_B]
    assert other_sections_first(FIRST, [SAME_A, SAME_B], 1) == [SAME_A]


def test_another_sections_line_under_the_share_or_after_a_refused_line_stays_out(
    sheet: KnowledgeIndex,
) -> None:
    low = Span(OTHER.text, OTHER.passage, RUNNER_UP_SHARE * FIRST.overlap * 0.99)
    assert runner_ups(sheet, QUESTION, [FIRST, SAME_A, SAME_B, low], [], [], []) == [SAME_A, SAME_B]
    # a repeat of the first line ends the run: the other section's line after it is not looked at
    again = Span(FIRST.text, SAME_A.passage, 0.98)
    assert runner_ups(sheet, QUESTION, [FIRST, again, OTHER], [], [], []) == []


def test_two_other_sections_fill_both_places_before_the_own_section(sheet: KnowledgeIndex) -> None:
    more = _span(
        "Sparse units accelerate embedding lookups in ranking models.", 0.92, 12, "Models", "models.md"
    )
    picked = other_sections_first(FIRST, [SAME_A, SAME_B, OTHER, more], 2)
    assert picked == [OTHER, more]
