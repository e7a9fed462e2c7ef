# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question that spells a count in words ('one Gridlet chip') quotes the line writing that count in digits
before the same noun ('1 chip'), not a line sharing more of the question's words that counts something
else ('4 chips per host'). Hand-made sheet on a tiny lexical index; with `COUNT_BONUS` at 1.0 the wordier
line is quoted, so the first test fails without the rule."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import counts_asked
from tpu_runtime.knowledge.quote_choice import gives_count
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet node pool sheet

## Gridlet machine types

- A Gridlet node pool uses machine type `gl-standard-4t` (4 chips per host) with a 4x4 topology for a 16-chip, 4-host slice. ([source](https://example.org/pool), checked 2026-12-06)
- Gridlet slice shapes and their machine types: a 1x1 slice (1 chip, sub-host) is `gl-standard-1t` and a 2x2 slice (4 chips) is `gl-standard-4t`. ([source](https://example.org/shapes), checked 2026-12-06)
"""
QUESTION = "I only want one Gridlet chip in my node pool, what machine type do I put in?"
ONE_CHIP = "gl-standard-1t"
PER_HOST = "4 chips per host"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("counts"), {"pools.md": SHEET})


def test_a_spelled_count_quotes_the_line_giving_it_in_digits(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, ONE_CHIP)


def test_without_the_bonus_the_wordier_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "COUNT_BONUS", 1.0)
    assert_quoted(sheet, QUESTION, PER_HOST)


def test_a_count_of_another_number_keeps_the_wordier_line(sheet: KnowledgeIndex) -> None:
    # 'two' chips: neither line writes '2 chips', so the bonus goes to no line
    assert_quoted(
        sheet, "I only want two Gridlet chips in my node pool, what machine type do I put in?", PER_HOST
    )


def test_which_spelled_counts_are_read() -> None:
    assert (1, "chip") in counts_asked("one Trillium chip")
    assert (2, "host") in counts_asked("split across two hosts")
    # a compound's first part names a kind, and 'one of / one or' picks among things: no count
    assert counts_asked("a single-host slice") == set()
    assert counts_asked("one of the hosts, one or the other") == set()


def test_the_line_must_count_the_same_noun() -> None:
    counted = counts_asked("one Trillium chip")
    assert gives_count(counted, "a 1x1 slice (1 chip, sub-host)")
    assert gives_count(counted, "a 1-chip slice")
    assert not gives_count(counted, "1 host of 4 chips")
    assert not gives_count(counted, "4 chips per host")
