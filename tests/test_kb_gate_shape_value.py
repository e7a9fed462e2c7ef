# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'What tile shape does X use' asks for sizes ('8x128', '(8, 128)'): a line on the same memory that only
writes the word 'shape' (a block shape passed in, a memory space chosen) does not say which shape. Hand-made
sheets on a tiny lexical index: refused from such a line, answered once a line giving the sizes is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import shape_value_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet kernel sheet

## Quillet scratch memory

- Quillet kernels keep lookup tables in scratch memory: pass `block_shape` and `memory_space=SCRATCH` to the tile spec so the scalar unit reads them. ([source](https://example.org/scratch), checked 2026-12-07)
"""
SIZES = """\
# Quillet tiling

## Quillet scratch tiles

- Quillet reads scratch memory in tiles of shape 1x128 words, one row per scalar load. ([source](https://example.org/tiles), checked 2026-12-07)
"""
QUESTION = "What tile shape does Quillet use for scratch memory?"


def test_the_word_alone_is_no_shape() -> None:
    line = "Pass `block_shape` and `memory_space=SCRATCH` to the tile spec."
    assert shape_value_fault(QUESTION, line)
    assert shape_value_fault("Which shape do Quillet tiles take?", line)
    for answered in ("Tiles are 1x128 words.", "Tiles are (8, 128) blocks.", "a 4 x 4 x 8 slice"):
        assert shape_value_fault(QUESTION, answered) is None, answered
    # a thousands separator is no pair of sizes
    assert shape_value_fault(QUESTION, "Quillet packs 1,024 values per tile.")
    # not a question picking a shape: left to the other checks
    assert shape_value_fault("How do I change the block shape of a Quillet kernel?", line) is None
    assert shape_value_fault("What does memory_space=SCRATCH do in Quillet?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("shape-bare"), {"quillet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("shape-full"), {"quillet.md": SHEET, "tiles.md": SIZES})


def test_the_line_without_sizes_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives no sizes")
    # what the line does say is still answered from it
    assert_quoted(
        bare, "Where do Quillet kernels keep lookup tables?", "keep lookup tables in scratch memory"
    )


def test_a_line_giving_the_sizes_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "1x128")
