# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question pairing a stack with a code name that no passage about that stack writes is not covered: the
sources name the code only about other things, so no line says how the two go together. Hand-made sheets on a
tiny lexical index, and the check read alone."""

from __future__ import annotations

import importlib

import pytest

from tests.kb_helpers import ask, assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import stack_fault
from tpu_runtime.knowledge.question_reading import _weights
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

JAX_SHEET = """\
# Tiny JAX mapping sheet

## Mapping over shards

- `jax.zorp_map` calls a function once per shard of a device mesh and stitches the results into one array. ([source](https://example.org/zorp-map), checked 2026-12-07)
- A ragged zorp splits a batch into pieces of uneven length before `jax.zorp_map` calls the function. ([source](https://example.org/ragged), checked 2026-12-07)
"""
MAXTEXT_SHEET = """\
# Tiny MaxText sheet

## Training step

- MaxText calls its training step once per batch and stitches the gradients of every device together. ([source](https://example.org/maxtext-step), checked 2026-12-07)
"""
MAXTEXT_ZORP_SHEET = """\
# Tiny MaxText zorp sheet

## Zorp maps in MaxText

- MaxText's zorp wrapper calls `jax.zorp_map` once per shard from inside its training step. ([source](https://example.org/maxtext-zorp), checked 2026-12-07)
"""
QUESTION = "How do I call jax.zorp_map once per shard of a device mesh inside MaxText?"


@pytest.fixture(scope="module")
def apart(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("stack-code-apart"), {"jax_zorp.md": JAX_SHEET, "maxtext.md": MAXTEXT_SHEET}
    )


@pytest.fixture(scope="module")
def together(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("stack-code-together"),
        {"jax_zorp.md": JAX_SHEET, "maxtext.md": MAXTEXT_SHEET, "maxtext_zorp.md": MAXTEXT_ZORP_SHEET},
    )


def test_a_code_name_no_passage_about_the_stack_writes_is_refused(apart: KnowledgeIndex) -> None:
    assert_refused(apart, QUESTION, "no passage about maxtext names jax.zorp_map")


def test_with_the_check_off_the_jax_line_is_quoted(
    apart: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the module, not the `answer` function the package exports under the same name
    monkeypatch.setattr(
        importlib.import_module("tpu_runtime.knowledge.answer"), "stack_fault", lambda *args: None
    )
    reply = ask(apart, QUESTION)
    assert reply.covered, reply.reason
    assert "jax.zorp_map" in reply.citations[0].quote


def test_the_question_without_the_stack_is_still_answered(apart: KnowledgeIndex) -> None:
    assert_quoted(
        apart, "How do I call a function once per shard of a device mesh with jax.zorp_map?", "jax.zorp_map"
    )


def test_a_passage_about_the_stack_naming_the_code_lets_it_through(together: KnowledgeIndex) -> None:
    assert stack_fault(together, QUESTION, _weights(together, QUESTION)) is None
    assert_quoted(together, QUESTION, "jax.zorp_map")


def test_plain_words_and_unknown_codes_are_left_to_other_checks(apart: KnowledgeIndex) -> None:
    # 'ragged' is written only about JAX, but a plain word a stack's passages may say otherwise
    plain = "How do I use a ragged zorp in a MaxText training step?"
    assert stack_fault(apart, plain, _weights(apart, plain)) is None
    # a code name no source writes is the unknown-name check's
    unknown = "How do I call jax.blip_map from inside a MaxText training step?"
    assert stack_fault(apart, unknown, _weights(apart, unknown)) is None
