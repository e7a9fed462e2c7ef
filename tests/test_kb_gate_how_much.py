# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A 'how much X Y' question ('how much host DRAM does a G3 VM have?') is not answered by a line whose
passage names no plain word of X Y ('G3 VMs have 96 GiB of chip memory' gives another amount). Hand-made
sheets on a tiny lexical index: refused from the chip-memory line, answered once a line on the host's
DRAM is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import how_much_fault, how_much_words
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridchip sheet

## Gridchip G3 VMs

- A Gridchip G3 VM has four chips and 96 GiB of chip memory (DRAM-backed) in all. ([source](https://example.org/g3-vm), checked 2026-12-07)
"""
HOST = """\
# Gridchip hosts

## Gridchip G3 hosts

- A Gridchip G3 VM's host has 384 GiB of DRAM. ([source](https://example.org/g3-host), checked 2026-12-07)
"""
QUESTION = "How much host DRAM does a Gridchip G3 VM have?"


def test_the_plain_words_of_what_is_asked() -> None:
    assert how_much_words(QUESTION) == ["host"]
    assert how_much_words("How much disk space does a G3 dump take?") == ["disk", "space"]
    # a preposition ends the thing asked: 'rank launches' is where the slack lies
    assert how_much_words("How much slack between rank launches does G3 allow?") == []
    # one word is left to the focus check; a generic quantity word ('size') names no thing
    assert how_much_words("How much HBM does a G3 chip have?") == []
    assert how_much_words("How much memory size does a G3 chip have?") == ["memory"]
    assert how_much_words("What host DRAM does a G3 VM have?") == []
    # 'what X size' asks an amount of X too; 'what tile shape' asks a property, left to the focus check
    assert how_much_words("What object store size should a G3 cluster get?") == ["object", "store"]
    assert how_much_words("What tile shape does G3 use for scalars?") == []


def test_a_passage_naming_none_of_the_words_is_a_fault() -> None:
    line = "A Gridchip G3 VM has four chips and 96 GiB of chip memory (DRAM-backed) in all."
    assert how_much_fault(QUESTION, line, "Gridchip G3 VMs")
    assert how_much_fault("How much disk space does a G3 dump take?", "A G3 dump holds one file per kernel.")
    # the line, another line of its passage, or any one word of the thing names it
    assert how_much_fault(QUESTION, "A G3 host has 384 GiB of DRAM.") is None
    assert how_much_fault(QUESTION, line, "Gridchip G3 VMs\nEach host runs one VM.") is None
    assert how_much_fault("How much disk space does a G3 dump take?", "A G3 dump takes 2 GB of disk.") is None
    deploy = "A G3 cluster is deployed with `./deploy.sh -H IP0 -W IP1,IP2`."
    assert how_much_fault("What object store size should a G3 cluster get?", deploy)
    assert (
        how_much_fault("What object store size should a G3 cluster get?", "Give the object store 40 GB.")
        is None
    )


def test_questions_not_asking_how_much_of_a_compound_are_not_judged() -> None:
    line = "A Gridchip G3 VM has four chips and 96 GiB of chip memory (DRAM-backed) in all."
    assert how_much_fault("How much HBM does a G3 VM have?", line) is None
    assert how_much_fault("How many chips does a G3 VM have?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("how-much-bare"), {"grid.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("how-much-full"), {"grid.md": SHEET, "host.md": HOST})


def test_the_chip_memory_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "how much host")


def test_the_host_line_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "384 GiB of DRAM")
