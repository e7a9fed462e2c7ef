# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A question naming TPU v5e as 'TPU v5 lite' (its accelerator type 'v5litepod' written apart) quotes the
v5e line: read as words, 'v5' matched the line of v5p, which a sheet also calls 'TPU v5', and left the
v5e line missing a specific term. Hand-made sheet on a tiny lexical index; without the rewrite the v5p
line is quoted, so the tests fail without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import answer
from tpu_runtime.knowledge.question_reading import generation_names
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet interconnect sheet

## Gridlet links per generation

- TPU v5p (also written TPU v5) Gridlet link bandwidth: 1200 GBps per chip, each v5 chip in a 3D torus. ([source](https://example.org/v5p), checked 2026-12-06)
- TPU v5e Gridlet link bandwidth: 400 GBps per chip in a 2D torus. ([source](https://example.org/v5e), checked 2026-12-06)
"""
QUESTION = "How much Gridlet link bandwidth does one TPU v5 lite chip get?"
V5P = "1200 GBps"
V5E = "400 GBps"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("v5-lite"), {"links.md": SHEET})


def test_v5_lite_is_read_as_v5e(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, QUESTION, V5E)


def test_without_the_rewrite_the_v5p_line_wins(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answer, "generation_names", lambda question: question)
    assert_quoted(sheet, QUESTION, V5P)


def test_a_plain_v5_question_keeps_the_v5p_line(sheet: KnowledgeIndex) -> None:
    assert_quoted(sheet, "How much Gridlet link bandwidth does one TPU v5 chip get?", V5P)


def test_only_the_spelled_apart_name_is_rewritten() -> None:
    assert generation_names("a 256-chip TPU v5 lite pod") == "a 256-chip TPU v5e pod"
    assert generation_names("Is v5-lite cheaper?") == "Is v5e cheaper?"
    # the accelerator type written whole is already v5e's name; 'v5' alone stays v5p's
    assert generation_names("a v5litepod-8 slice") == "a v5litepod-8 slice"
    assert generation_names("TPU v5 chips") == "TPU v5 chips"
