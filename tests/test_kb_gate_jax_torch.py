# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question on JAX is not answered by a line on a torch stack only (PyTorch/XLA, TorchTPU), nor a question on
a torch stack by a line on JAX from outside that stack's sheet: the two share the words of tracing, logging
and caching, but the torch stacks do not build on JAX. Hand-made sheets on a tiny lexical index and lines
judged alone."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index, sheet_line
from tpu_runtime.knowledge.answer_gate import jax_torch_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

TORCH_SHEET = """\
# Tiny PyTorch/XLA logging sheet

## Recompilation logs

- The environment variable `PTX_FROB_RECOMPILES=1` makes PyTorch/XLA log every recompilation with its cause. ([source](https://example.org/ptx-frob), checked 2026-12-07)
"""
JAX_SHEET = """\
# Tiny JAX logging sheet

## Recompilation logs in JAX

- The environment variable `JAX_FROB_RECOMPILES=1` makes JAX log every recompilation with its cause. ([source](https://example.org/jax-frob), checked 2026-12-07)
"""
# JAX known to the corpus, on another subject, so only the check refuses the JAX question
OTHER_JAX_SHEET = """\
# Tiny JAX compile sheet

## Compiling in JAX

- `jax.jit` compiles a JAX function for the shapes of its first call and reuses the program afterwards. ([source](https://example.org/jax-jit), checked 2026-12-07)
"""
JAX_QUESTION = "Which environment variable makes JAX log every recompilation with its cause?"
TORCH_QUESTION = "Which environment variable makes PyTorch/XLA log every recompilation with its cause?"
TORCH_LINE = "The environment variable `PTX_FROB_RECOMPILES=1` makes PyTorch/XLA log every recompilation."
JAX_LINE = "The environment variable `JAX_FROB_RECOMPILES=1` makes JAX log every recompilation."


def test_a_jax_question_on_a_torch_line_is_a_fault() -> None:
    elsewhere = sheet_line(TORCH_LINE, 3, "Recompilation logs", "knowledge/frob.md")
    assert "about JAX" in (jax_torch_fault(JAX_QUESTION, TORCH_LINE, elsewhere) or "")
    torchtpu = "Setting `TPX_FROB=1` makes TorchTPU log every recompilation."
    assert jax_torch_fault(JAX_QUESTION, torchtpu, elsewhere)
    # the line's stack asked, a line naming JAX too, a torch front end on JAX, a line naming no stack
    assert jax_torch_fault(TORCH_QUESTION, TORCH_LINE, elsewhere) is None
    both = "Both JAX and PyTorch/XLA log every recompilation when `FROB=1` is set."
    assert jax_torch_fault(JAX_QUESTION, both, elsewhere) is None
    torchax = "Setting `TAX_FROB=1` makes torchax log every recompilation."
    assert jax_torch_fault(JAX_QUESTION, torchax, elsewhere) is None
    assert jax_torch_fault(JAX_QUESTION, "Setting `FROB=1` logs every recompilation.", elsewhere) is None
    # a question naming no JAX is not judged
    assert (
        jax_torch_fault("Which environment variable logs every recompilation?", TORCH_LINE, elsewhere) is None
    )


def test_a_torch_question_on_a_jax_line_is_a_fault_outside_its_sheet() -> None:
    jax_sheet = sheet_line(JAX_LINE, 3, "Recompilation logs in JAX", "knowledge/jax_frob.md")
    assert "quoted line about JAX" in (jax_torch_fault(TORCH_QUESTION, JAX_LINE, jax_sheet) or "")
    # the same words in the PyTorch/XLA sheet are about PyTorch/XLA's use of JAX
    own_sheet = sheet_line(JAX_LINE, 3, "Recompilation logs", "knowledge/pytorch_xla.md")
    assert jax_torch_fault(TORCH_QUESTION, JAX_LINE, own_sheet) is None
    # a line naming the asked stack, or no JAX, is not about JAX alone
    both = "PyTorch/XLA logs every recompilation through JAX when `FROB=1` is set."
    assert jax_torch_fault(TORCH_QUESTION, both, jax_sheet) is None
    plain = "The environment variable `FROB=1` logs every recompilation."
    assert jax_torch_fault(TORCH_QUESTION, plain, jax_sheet) is None
    # torchax is a torch front end on JAX, not a torch stack
    torchax_question = "Which environment variable makes torchax log every recompilation with its cause?"
    assert jax_torch_fault(torchax_question, JAX_LINE, jax_sheet) is None


@pytest.fixture(scope="module")
def torch_only(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("jax-torch-bare"), {"ptx_frob.md": TORCH_SHEET, "jax_jit.md": OTHER_JAX_SHEET}
    )


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("jax-torch-full"), {"ptx_frob.md": TORCH_SHEET, "jax_frob.md": JAX_SHEET}
    )


def test_a_jax_question_with_only_a_torch_line_is_refused(torch_only: KnowledgeIndex) -> None:
    assert_refused(torch_only, JAX_QUESTION, "about JAX")


def test_the_torch_question_is_still_answered(torch_only: KnowledgeIndex) -> None:
    assert_quoted(torch_only, TORCH_QUESTION, "PTX_FROB_RECOMPILES")


def test_a_jax_line_answers_the_jax_question(both: KnowledgeIndex) -> None:
    assert_quoted(both, JAX_QUESTION, "JAX_FROB_RECOMPILES")
