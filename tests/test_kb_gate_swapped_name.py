# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A line naming a sibling of the question's name beside the same plain word ('scoped FMEM' for 'scoped
GMEM') is about the sibling: every other word of the question matched it. Hand-made sheets on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import swap_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton kernels

## Everyday Frobton kernel rules

- Giving a Frobton kernel more FMEM: `compiler_params=FrobParams(fmem_limit_bytes=N)` raises the scoped FMEM limit the kernel may use, for large blocks. ([source](https://example.org/fmem), checked 2026-12-07)
- Scalars of a Frobton kernel (indices, loop bounds) belong in GMEM, the small scalar memory. ([source](https://example.org/gmem), checked 2026-12-07)
"""
GMEM_LIMIT = """\
# Tiny Frobton scalar memory

## GMEM limits

- Giving a Frobton kernel more GMEM: `compiler_params=FrobParams(gmem_limit_bytes=N)` raises the scoped GMEM limit. ([source](https://example.org/gmem-limit), checked 2026-12-07)
"""
QUESTION = "How do I give a Frobton kernel more scoped GMEM?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("swap-bare"), {"frobton.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("swap-full"), {"frobton.md": SHEET, "gmem.md": GMEM_LIMIT})


def test_a_sibling_after_the_same_plain_word_is_a_swap() -> None:
    line = "Giving a Frobton kernel more FMEM raises the scoped FMEM limit."
    assert swap_fault(QUESTION, line, "") == "the quoted line names FMEM where the question names GMEM"
    assert swap_fault("How do I give a Frobton kernel more scoped FMEM?", line, "") is None
    # the plain word after the name as well; not a sentence's first word
    assert swap_fault("How do I raise the GMEM limit of a Frobton kernel?", line, "") == (
        "the quoted line names FMEM where the question names GMEM"
    )
    assert swap_fault("Scope limit: how do I raise it?", "It raises the Fmem limit.", "") is None
    # a plain word, a name of another shape or a name the question writes is no sibling
    assert swap_fault(QUESTION, "It raises the scoped memory limit.", "") is None
    assert swap_fault(QUESTION, "It raises the scoped Fmem limit.", "") is None
    assert swap_fault("Is scoped GMEM larger than FMEM?", line, "") is None
    # the line naming the question's name anywhere, heading included, is about it
    assert swap_fault(QUESTION, line, "GMEM and FMEM") is None


def test_the_sibling_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "names FMEM where the question names GMEM")


def test_the_line_on_the_name_asked_answers(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "gmem_limit_bytes")
    assert_quoted(bare, "How do I give a Frobton kernel more scoped FMEM?", "fmem_limit_bytes")
