# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Wordings nobody tuned for: a question asked for another kind of processor than the line's claim
('fastest on GPU' against a line 'fastest on TPU'). Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.answer_gate import platforms_named, span_faults
from tpu_runtime.knowledge.question_reading import _weights, platforms_asked
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet random number generators

- The `blip` generator is the fastest Gridlet random number generator on TPU. ([source](https://example.org/rng), checked 2026-12-04)
"""
GPU_LINE = """\
# Gridlet on GPUs

## Gridlet random number generators on GPUs

- On GPU the `blop` generator is the fastest Gridlet random number generator. ([source](https://example.org/rng-gpu), checked 2026-12-04)
"""


@pytest.fixture(scope="module")
def tpu_only(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("wording-tpu"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("wording-both"), {"gridlet.md": SHEET, "gpu.md": GPU_LINE})


def test_the_processor_asked_for_is_read_after_on_or_for() -> None:
    assert platforms_asked("Which generator is fastest on GPU?") == {"gpu"}
    assert platforms_asked("Is there a kernel for NVIDIA cards or CPUs?") == {"gpu"}
    # a host CPU is a part of a TPU VM, not the processor the question is asked for
    assert platforms_asked("What bus links a v6e chip to the host CPU?") == set()
    assert platforms_named("Threefry gives the same numbers on CPU, GPU and TPU.") == {"cpu", "gpu", "tpu"}


def test_a_line_claiming_for_another_processor_is_faulted() -> None:
    question = "Which Gridlet generator is fastest on GPU?"
    line = "The `blip` generator is the fastest Gridlet random number generator on TPU."
    assert any("gpu" in f and "tpu" in f for f in span_faults(question, line, ""))
    # a line naming no processor, or naming the one asked about, is not
    assert not span_faults(question, "The `blip` generator is the fastest Gridlet generator.", "")
    assert not span_faults(question, "On GPU and TPU the `blip` generator is the fastest.", "")


def test_a_question_for_another_processor_is_refused(tpu_only: KnowledgeIndex) -> None:
    assert ask(tpu_only, "Which Gridlet random number generator is fastest on TPU?").covered
    reply = ask(tpu_only, "Which Gridlet random number generator is fastest on GPU?")
    assert not reply.covered, reply.answer
    assert "asks about gpu" in reply.reason


def test_the_line_for_the_processor_asked_about_is_quoted(both: KnowledgeIndex) -> None:
    reply = ask(both, "Which Gridlet random number generator is fastest on GPU?")
    assert reply.covered, reply.reason
    assert "`blop`" in reply.citations[0].quote


NUMERICS = """\
# Tiny Gridlet numerics sheet

## Gridlet eager and compiled runs

- Gridlet's compiled runs fuse ops, so their results can sit a few ulps away from eager runs. ([source](https://example.org/ulps), checked 2026-12-04)
"""


def test_a_comparison_word_frames_the_question_in_the_plural_too(tmp_path: Path) -> None:
    index = lexical_index(tmp_path, {"numerics.md": NUMERICS})
    # 'difference' frames a comparison, and so does 'differences': neither weighs as a word the line lacks
    for question in (
        "Why is there a difference between eager and compiled Gridlet runs?",
        "Why are there tiny differences between eager and compiled Gridlet runs?",
    ):
        weights = _weights(index, question)
        assert not {"difference", "differences"} & set(weights), weights
        assert {"eager", "compiled", "gridlet"} <= set(weights)
        reply = ask(index, question)
        assert reply.covered and "few ulps" in reply.citations[0].quote, reply.reason
