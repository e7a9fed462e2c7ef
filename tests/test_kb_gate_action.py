# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The action of a 'how do I <verb>' question that no source uses in any form ('encrypt' the cache
folder) cannot be answered by a line giving some other command for the same thing ('cap the cache with
--max-size'); once a source says how to do it, the question is answered. Hand-made sheets on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet cache sheet

## Gridlet cache folder

- `gridlet cache --max-size=4G` caps the Gridlet compilation cache folder in bytes, evicting the oldest entries. ([source](https://example.org/cache), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet cache encryption

## Gridlet cache encryption

- To encrypt the Gridlet compilation cache folder, run `gridlet cache --encrypt --key=KEYFILE`. ([source](https://example.org/encrypt), checked 2026-12-06)
"""
QUESTION = "How do I encrypt the Gridlet compilation cache folder?"
CAP = "How do I cap the Gridlet compilation cache folder?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("action-bare"), {"cache.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("action-full"), {"cache.md": SHEET, "encrypt.md": ANSWER})


def test_an_action_no_source_uses_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never mention 'encrypt'")


def test_an_action_a_source_uses_is_answered(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert_quoted(bare, CAP, "--max-size=4G")
    assert_quoted(full, QUESTION, "--encrypt")
