# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A specific term the quoted line need not name: a value the question gives as an example of its input
('a type like v6e-8') and a module path the line names as the start of a longer dotted name. The same
value given as the subject, or another module, still has to be named. Hand-made sheets on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge.answer_gate import _missing_specific
from tpu_runtime.knowledge.question_reading import example_terms
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton helpers

## Widget names

- Frobton's `frob.util.widgets.arm_count_from_name` lower-cases its input and maps "FROB-A4" to 4 arms; it raises `ValueError` for a widget family Frobton does not know. ([source](https://example.org/arms), checked 2026-12-06)

## Weights

- `frob.scale.weigh` says a frob-a4x-16 widget weighs 3 kg. ([source](https://example.org/weights), checked 2026-12-06)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("examples"), {"frobton.md": SHEET})


def test_examples_and_module_paths() -> None:
    assert "frob-a4x-16" in example_terms("If I pass a name like frob-a4x-16, what comes back?")
    assert "frob-a4x-16" in example_terms("for names such as frob-a4x-16")
    assert example_terms("What does frob-a4x-16 return?") == set()
    line = "`frob.util.widgets.arm_count_from_name` maps names"
    assert _missing_specific(["frob.util.widgets"], line) == []
    assert _missing_specific(["frob.util.gadgets"], line) == ["frob.util.gadgets"]


def test_an_example_input_need_not_be_quoted(index: KnowledgeIndex) -> None:
    assert_quoted(
        index,
        "Does Frobton's arm_count_from_name in frob.util.widgets lower-case a widget name like frob-a4x-16 and map it to arms?",
        "arm_count_from_name",
    )
    # the same value as the thing asked about, and another module, must be named
    for question in (
        "Does Frobton's arm_count_from_name in frob.util.widgets lower-case the frob-a4x-16 widget name and map it to arms?",
        "Does Frobton's arm_count_from_name in frob.scale lower-case a widget name like FROB-A4 and map it to arms?",
    ):
        reply = ask(index, question)
        assert not reply.covered and "no passage line names" in reply.reason, reply.reason
