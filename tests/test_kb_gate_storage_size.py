# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'How much disk space does X take', 'what boot disk size does Y use' ask how big some storage is, which a
line gives only by a figure in bytes (or a share or multiple of one): a line naming a memory space's number
or listing a disk's flags does not say it. Hand-made sheets on a tiny lexical index: refused from such a
line, answered once a line giving the size is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import storage_size_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet trace sheet

## Quillet trace dumps

- `quillet trace --dump-to DIR` writes one trace dump per kernel into DIR; dumps of the internal spaces (space 7) go to the same disk folder. ([source](https://example.org/trace), checked 2026-12-07)
"""
SIZES = """\
# Quillet trace sizes

## Quillet trace dump sizes

- A Quillet trace dump of one kernel takes about 40 MB of disk space. ([source](https://example.org/trace-size), checked 2026-12-07)
"""
QUESTION = "How much disk space does a quillet trace dump of one kernel take?"


def test_a_line_without_a_size_is_a_fault() -> None:
    line = "Dumps of the internal spaces (space 7) go to the same disk folder."
    assert storage_size_fault(QUESTION, line)
    assert storage_size_fault("What boot disk size does quillet up use when none is given?", line)
    for answered in (
        "Each dump takes about 40 MB.",
        "It needs 2 GiB per host.",
        "Dumps take twice the kernel's size.",
        "about 5% of the disk",
        "sized at 12 bytes per parameter",  # a plain byte count is a size too
    ):
        assert storage_size_fault(QUESTION, answered) is None, answered
    # the word alone, or a count of something else, is no size
    assert storage_size_fault(QUESTION, "Dumps keep every byte of the kernel's 7 buffers.")
    # a figure in the source note is no size
    assert storage_size_fault(
        QUESTION, "Dumps go to DIR ([source](https://example.org/100GB), checked 2026-12-07)"
    )
    # memory asked ('how much host DRAM') is left to the checks of memory's own unit, and 'how' asks a way
    assert storage_size_fault("How much host DRAM does a Quillet host have?", line) is None
    assert storage_size_fault("How do I free disk space after a quillet trace?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("storage-bare"), {"quillet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("storage-full"), {"quillet.md": SHEET, "sizes.md": SIZES})


def test_the_line_without_a_size_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives no size")
    # what the line does say is still answered from it
    assert_quoted(bare, "Where does quillet trace write its dumps?", "writes one trace dump per kernel")


def test_a_line_giving_the_size_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "40 MB")
