# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A stack the question names by its code name (`torch_xla`) is named by a quoted line that calls it by its
prose name ('PyTorch/XLA'): the identifier is a specific term, which the line would otherwise have to
write whole. An API path beginning with the code name, or another stack's name, does not count. A gate
check only: ranking still weighs the identifier. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.products import names_product_of
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# PyTorch/XLA launch notes

## SPMD on GPU

- PyTorch/XLA SPMD on GPU machines launched with torchrun takes `--nproc_per_node=1`, one process per host driving every GPU. ([source](https://example.org/spmd-gpu), checked 2026-12-06)

## Spawning

- `torch_xla.launch` starts one process per device and replaces `mp.spawn`. ([source](https://example.org/launch), checked 2026-12-06)
"""

# the stack named in the asking clause itself: named in a story before it, no line need name it at all
QUESTION = "What do I set --nproc_per_node to for a torch_xla SPMD job that torchrun starts on GPU machines?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("products"), {"ptxla.md": SHEET})


def test_which_spellings_name_the_stack() -> None:
    assert names_product_of("torch_xla", "PyTorch/XLA SPMD on GPU machines")
    assert names_product_of("torch_tpu", "TorchTPU runs ops eagerly")
    # an API path the code name begins, another stack, or a prose spelling asked are not let off
    assert not names_product_of("torch_xla", "`torch_xla.launch` starts one process per device")
    assert not names_product_of("torch_tpu", "vLLM TorchTPU serves models")
    assert not names_product_of("torch_xla", "TorchTPU runs ops eagerly")
    assert not names_product_of("pytorch/xla", "call torch_xla here")


def test_the_prose_name_answers_the_code_name(index: KnowledgeIndex) -> None:
    assert_quoted(index, QUESTION, "--nproc_per_node=1")


def test_without_the_rule_the_line_is_refused(index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(answer_gate, "names_product_of", lambda token, text: False)
    reply = ask(index, QUESTION)
    assert not reply.covered and "no passage line names torch_xla" in reply.reason, reply.reason
