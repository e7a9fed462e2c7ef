# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The gate's check on which stack a question is about: a line about PyTorch/XLA does not answer a
question about TorchTPU, however many words they share; a line naming the stack asked about, or none
under a heading about it, does. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import product_fault
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.products import products_named
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

OTHER_STACKS = """\
# Loops on other stacks

## Loop tracing

- PyTorch/XLA's loop detection folds a loop after 8 repeated iterations of the same body. ([source](https://example.org/ptxla-loop), checked 2026-12-06)
- On SGL-JAX, 12 of the DeepSeek decomposition tests fail on a v6e slice. ([source](https://example.org/sgl), checked 2026-12-06)
"""
OWN_STACK = """\
# TorchTPU loops

## TorchTPU loop detection

- Loop detection folds a repeated body after 3 repeated iterations of the same graph. ([source](https://example.org/tt-loop), checked 2026-12-06)
"""
QUESTION = "After how many repeated iterations does TorchTPU's loop detection fold a loop?"


@pytest.fixture(scope="module")
def others(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("stacks-other"), {"other.md": OTHER_STACKS})


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("stacks-both"), {"other.md": OTHER_STACKS, "own.md": OWN_STACK}
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("vLLM TorchTPU serves Qwen3", {"vllm_torchtpu"}),  # the longer name, not TorchTPU inside it
        ("torch_tpu replaces torch_xla", {"torchtpu", "pytorch_xla"}),
        ("sglang-jax on v6e", {"sglang_jax"}),  # not JAX
        ("JAX and PyTorch on a TPU VM", set()),  # what every stack builds on singles none out
        ("see https://github.com/example/torch_tpu/blob/main/x.py", set()),  # a repository path is no name
    ],
)
def test_the_stacks_a_text_names(text: str, expected: set[str]) -> None:
    assert products_named(text) == expected


def test_a_line_about_another_stack_is_a_fault() -> None:
    passage = Passage(text="", source="s", score=0.0, kind="curated", path="other.md", line=1, chunk_id="c")
    fault = product_fault(QUESTION, "PyTorch/XLA stops unrolling after 8 iterations.", passage)
    assert fault is not None and "torchtpu" in fault and "pytorch_xla" in fault
    # a line naming the stack asked about passes, even beside another one
    assert product_fault(QUESTION, "TorchTPU, unlike PyTorch/XLA, folds loops.", passage) is None
    # a question naming no stack asks nothing of the line
    assert (
        product_fault("After how many iterations is a loop folded?", "PyTorch/XLA folds loops.", passage)
        is None
    )


def test_a_line_naming_no_stack_takes_its_heading_s() -> None:
    under = Passage(
        text="", source="s", score=0.0, kind="curated", path="own.md", line=1, chunk_id="c",
        section="Loops \u203a TorchTPU loop detection",
    )  # fmt: skip
    assert product_fault(QUESTION, "Loop detection folds a body after 3 iterations.", under) is None
    elsewhere = under.model_copy(update={"section": "Loops \u203a PyTorch/XLA loop tracing"})
    assert product_fault(QUESTION, "Loop detection folds a body after 3 iterations.", elsewhere) is not None


def test_another_stack_s_figure_is_refused(others: KnowledgeIndex) -> None:
    assert_refused(others, QUESTION, "the question is about torchtpu")
    assert_refused(
        others, "How many of TorchTPU's DeepSeek decomposition tests fail on v6e?", "about torchtpu"
    )


def test_the_stack_s_own_line_is_quoted(both: KnowledgeIndex) -> None:
    assert_quoted(both, QUESTION, "after 3 repeated iterations")
