# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking an amount per some thing ('the link bandwidth per port') is not answered by a passage
that never names that thing: its figure is per another thing ('per chip') or a total. Hand-made sheets on a
tiny lexical index: refused from a per-chip line, answered once a line giving the per-port figure is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import per_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridchip sheet

## Gridchip links

- Gridchip G3 link bandwidth is 1200 GBps bidirectional per chip, over the grid links of the chip. ([source](https://example.org/g3), checked 2026-12-06)
"""
PORTS = """\
# Gridchip link ports

## Gridchip link ports

- Gridchip G3 link bandwidth per port works out to 300 GBps (1200 GBps over 4 ports). ([source](https://example.org/g3-ports), checked 2026-12-06)
"""
QUESTION = "What is the Gridchip G3 link bandwidth per port?"


def test_a_passage_never_naming_the_divisor_is_a_fault() -> None:
    line = "Gridchip G3 link bandwidth is 1200 GBps bidirectional per chip."
    assert per_fault(QUESTION, line, "## Gridchip links\n" + line)
    # a total does not give the amount per a thing the line never names
    assert per_fault("How much host DRAM per vCPU does a G3 VM give?", "A G3 VM has 720 GB of RAM.")
    # the divisor is the last word after 'per' before a function word
    assert per_fault("How much memory per grid TensorCore does G3 have?", "G3 has 96 GiB of memory.")


def test_a_passage_naming_the_divisor_or_its_synonym_is_not_a_fault() -> None:
    assert per_fault(QUESTION, "Link bandwidth per port is 300 GBps (1200 GBps over 4 ports).") is None
    # another form of the word, or a word the synonym list puts beside it
    assert per_fault(QUESTION, "Each of the 4 ports carries 300 GBps.") is None
    assert per_fault("How much HBM per chip does G3 have?", "G3 has 96 GiB of HBM per device.") is None
    assert per_fault("How many MXUs per core?", "Each G3 TensorCore has four MXUs.") is None
    # named only by the passage around the quoted line
    assert per_fault(QUESTION, "G3 links carry 1200 GBps.", "G3 chips have 4 ports.") is None


def test_time_units_hyphens_and_questions_without_per_are_not_judged() -> None:
    line = "Gridchip G3 link bandwidth is 1200 GBps."
    assert per_fault("How many bytes per second does a G3 link carry?", line) is None
    assert per_fault("How many tokens per hour does G3 serve?", line) is None
    assert per_fault("What does the per-port counter of G3 show?", line) is None
    assert per_fault("What is the Gridchip G3 link bandwidth?", line) is None
    # a host is not a VM: 'per host' needs a line naming hosts
    assert per_fault("How much DRAM per host does G3 have?", "A G3 VM has 720 GB of RAM.")


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("per-bare"), {"grid.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("per-full"), {"grid.md": SHEET, "ports.md": PORTS})


def test_a_per_chip_line_is_refused_for_a_per_port_question(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "amount per port")


def test_the_per_port_line_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "per port works out to 300 GBps")
