"""A runner-up line that restates a line already quoted (another source's wording of the same fact) is not
quoted: it tells the reader nothing new, so its place goes to the next close line, which may hold the
answer. A close line saying something else of the same subject is still quoted."""

# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_helpers import lexical_index, quote_span
from tpu_runtime.knowledge.answer_gate import Span
from tpu_runtime.knowledge.quote_choice import RESTATED_SHARE, restates, runner_ups
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny cluster sheet

## Pools

- A pool of linked boards is managed as one unit. ([source](https://example.org/pools), checked 2026-12-07)
"""

QUESTION = "What does the scheduler do with a pool of linked boards when one board breaks?"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("restated")), {"pools.md": SHEET})


def _span(text: str, overlap: float, line: int, section: str, path: str = "pools.md") -> Span:
    return quote_span(text, overlap, line, section, path)


FIRST = _span(
    "If the scheduler cannot place one board of a linked pool, it places none of them.", 1.0, 3, "Pools"
)
REPAIR = _span(
    "When one board of a linked pool needs repair, the scheduler stops every board of the pool and restarts the jobs once all are back.",
    0.98,
    7,
    "Repairs",
    "repairs.md",
)
# the same fact from another page, in nearly the same words
REPAIR_AGAIN = _span(
    "When one board of a linked pool needs repair, the scheduler stops every board of the pool, restarting the jobs once all are back.",
    0.97,
    9,
    "Capacity modes",
    "capacity.md",
)
ANSWER = _span(
    "The scheduler treats a linked pool as one unit: if a board breaks it recreates the whole pool.",
    0.95,
    4,
    "Pools",
)


def test_a_restating_runner_up_gives_its_place_to_the_next_close_line(sheet: KnowledgeIndex) -> None:
    assert restates(REPAIR_AGAIN.text, REPAIR.text)
    assert runner_ups(sheet, QUESTION, [FIRST, REPAIR, REPAIR_AGAIN, ANSWER], [], [], []) == [REPAIR, ANSWER]


def test_a_close_line_saying_something_else_is_still_quoted(sheet: KnowledgeIndex) -> None:
    assert not restates(ANSWER.text, FIRST.text)
    assert not restates(REPAIR.text, FIRST.text)
    # without the restating line the two closest lines are quoted as before
    assert runner_ups(sheet, QUESTION, [FIRST, REPAIR, ANSWER], [], [], []) == [REPAIR, ANSWER]
    # and a restating line alone leaves the place empty rather than quoting the same fact twice
    assert runner_ups(sheet, QUESTION, [FIRST, REPAIR, REPAIR_AGAIN], [], [], []) == [REPAIR]


def test_the_share_of_shared_words_decides() -> None:
    line = "Queued requests expire at their end time but stay listed until deleted."
    assert restates("Queued requests expire at the end time but stay listed until deleted.", line)
    assert not restates("Queued requests wait in a queue until capacity is free.", line)
    assert 0.0 < RESTATED_SHARE < 1.0
