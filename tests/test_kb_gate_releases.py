# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A release a question names by product and number ('Gridlet 2.0') is known only whole: the product's
name is on every line of its sheet and '2.0' in any figure, so a line on another release ('Gridlet
0.2.4') or another '2.0' matches it word by word. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import release_known
from tpu_runtime.knowledge.question_reading import releases_named
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet releases

## What each Gridlet release changed

- Gridlet 0.2.4 turned on the new scheduler by default for Gridlet clusters and printed a warning for the old one. ([source](https://example.org/0.2.4), checked 2026-12-06)
- Gridlet's cache keeps only programs that took longer than 2.0 s to compile on Gridlet clusters. ([source](https://example.org/cache), checked 2026-12-06)
"""
LATER = """\
# Tiny Gridlet 2.0 notes

## Gridlet 2.0

- Gridlet v2.0 changed the new scheduler of Gridlet clusters to preempt idle workloads first. ([source](https://example.org/2.0), checked 2026-12-06)
"""
QUESTION = "What did Gridlet 2.0 change in the scheduler of Gridlet clusters?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("releases-bare"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("releases-full"), {"gridlet.md": SHEET, "later.md": LATER})


def test_a_release_is_a_name_then_a_dotted_number() -> None:
    assert releases_named(QUESTION) == ["Gridlet 2.0"]
    assert releases_named("What does vllm-tpu 1.5 add?") == ["vllm-tpu 1.5"]
    assert releases_named("Which APIs did PyTorch/XLA v4.0 remove?") == ["PyTorch/XLA 4.0"]
    # an amount in a unit, a multiplier, a number after a function word or with no dot is no release
    assert releases_named("Does the chip run at 1.5 GHz?") == []
    assert releases_named("Is the kernel 2.0x faster than 1.5?") == []
    assert releases_named("What changed in Gridlet 2?") == []


def test_a_release_is_known_with_or_without_its_v(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert release_known(bare, "Gridlet 0.2.4")
    assert releases_named("What did Gridlet v0.2.4 change?") == ["Gridlet 0.2.4"]  # as the sheet writes it
    assert not release_known(bare, "Gridlet 2.0")
    assert release_known(full, "Gridlet 2.0")  # written 'Gridlet v2.0'


def test_another_releases_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never mention Gridlet 2.0")


def test_a_release_the_sources_write_answers(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert_quoted(
        bare, "What did Gridlet 0.2.4 change in the scheduler of Gridlet clusters?", "Gridlet 0.2.4"
    )
    assert_quoted(full, QUESTION, "preempt idle workloads first")
