# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question about a price or cost ('is a G3 chip-hour cheaper in north-1 than in south-2?') is not
answered by a line that says where or how the thing is offered and names no price. Hand-made sheets on a
tiny lexical index: refused from a zone line, answered once a line giving the price is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import price_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridchip sheet

## Gridchip zones

- Gridchip G3 is offered in the zones north-1a, north-1b and south-2a. ([source](https://example.org/g3-zones), checked 2026-12-06)
"""
PRICES = """\
# Gridchip pricing

## Gridchip pricing

- A Gridchip G3 chip costs the same in every zone: $1.20 per chip-hour on demand in north-1 and south-2. ([source](https://example.org/g3-pricing), checked 2026-12-06)
"""
QUESTION = "Is a Gridchip G3 chip cheaper in north-1 than in south-2?"


def test_a_line_naming_no_price_is_a_fault() -> None:
    line = "Gridchip G3 is offered in the zones north-1a, north-1b and south-2a."
    assert price_fault(QUESTION, line)
    assert price_fault("What does one G3 chip cost per hour?", line)
    assert price_fault("What discount do Spot G3 VMs get?", "Spot G3 VMs can be preempted at any time.")
    for priced in (
        "A G3 chip-hour is $1.20.",
        "G3 pricing is the same in every zone.",
        "A G3 chip costs less than a G2 chip.",
        "Spot G3 VMs run at a large discount.",
        "A preempted G3 VM is not charged.",
    ):
        assert price_fault(QUESTION, priced) is None, priced


def test_questions_not_asking_a_price_are_not_judged() -> None:
    line = "Gridchip G3 is offered in the zones north-1a, north-1b and south-2a."
    assert price_fault("In which zones is Gridchip G3 offered?", line) is None
    # 'at the cost of' names a trade-off, not a price
    assert price_fault("How do I lower G3 latency at the cost of throughput?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("price-bare"), {"grid.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("price-full"), {"grid.md": SHEET, "prices.md": PRICES})


def test_a_zone_line_is_refused_for_a_price_question(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "price or cost")


def test_the_price_line_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "$1.20 per chip-hour")
