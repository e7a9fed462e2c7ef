# ruff: noqa: E501  (fact-sheet lines are long by design)
"""An attribute a 'what X / which X' question picks ('what timeout does X use', 'what tile shape') must be
named by the quoted line or given as a value in its unit (a time, a pair of sizes): a line on the same
command or array that gives neither does not answer it. Hand-made sheets on a tiny lexical index:
refused from lines that share the words, answered once the line giving the value is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults
from tpu_runtime.knowledge.question_reading import focus_term, value_units
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet sheet

## Gridlet join

- `gridlet join` waits for the coordinator to come up before it starts the pool's workers. ([source](https://example.org/join), checked 2026-12-05)

## Gridlet layouts

- Gridlet keeps int8 arrays in VMEM, packed four values to a 32-bit word. ([source](https://example.org/int8), checked 2026-12-05)
"""
ANSWERS = """\
# Gridlet values

## Gridlet values

- `gridlet join` gives up waiting for the coordinator after 300 seconds. ([source](https://example.org/join2), checked 2026-12-05)
- Gridlet lays out int8 arrays in VMEM as (32, 128) blocks. ([source](https://example.org/int8b), checked 2026-12-05)
"""
CASES = [
    # (question, what the answering line quotes, the attribute the bare lines do not give)
    ("What timeout does gridlet join use while waiting for the coordinator?", "300 seconds", "timeout"),
    ("What shape does Gridlet use for int8 arrays in VMEM?", "(32, 128)", "shape"),
]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("picked-bare"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("picked-full"), {"gridlet.md": SHEET, "values.md": ANSWERS})


def test_what_and_which_pick_an_attribute_with_a_unit() -> None:
    assert focus_term("What timeout does gridlet join use?") == "timeout"
    assert focus_term("Which interval does the poller use?") == "interval"
    assert focus_term("What tile shape does Gridlet use for int8?") == "shape"
    # a thing picked by name is answered by a line naming one, not by the word
    assert focus_term("What tool shows the pool's workers?") is None
    assert focus_term("What does gridlet join do?") is None


def test_a_value_in_the_unit_names_the_attribute() -> None:
    question = "What timeout does gridlet join use?"
    assert not span_faults(question, "`gridlet join` gives up after 5 minutes.", "Join")
    assert any("'timeout'" in f for f in span_faults(question, "`gridlet join` waits for the pool.", "Join"))
    shape = "What shape does Gridlet use for int8 arrays?"
    assert not span_faults(shape, "Gridlet tiles int8 arrays as 32x128 blocks.", "Layouts")
    # a thousands separator is no pair of sizes
    assert any("'shape'" in f for f in span_faults(shape, "Gridlet packs 1,024 int8 arrays.", "Layouts"))


def test_a_pair_of_sizes_names_a_shape_only_when_one_is_asked_for() -> None:
    assert "shape" in value_units("What shape does Gridlet use for int8 arrays?")
    # a yes-or-no question about shapes: a line giving one pool's '2x4' does not answer it
    assert "shape" not in value_units("Do all Gridlet pools need the same shape?")
    assert "timeout" in value_units("Does gridlet join have a timeout?")


@pytest.mark.parametrize(("question", "expected", "attribute"), CASES)
def test_a_line_giving_the_value_answers(
    full: KnowledgeIndex, question: str, expected: str, attribute: str
) -> None:
    assert_quoted(full, question, expected)


@pytest.mark.parametrize(("question", "expected", "attribute"), CASES)
def test_a_line_sharing_the_words_but_not_the_value_is_refused(
    bare: KnowledgeIndex, question: str, expected: str, attribute: str
) -> None:
    assert_refused(bare, question, f"anything about '{attribute}'")


def test_a_score_is_a_share_or_a_fraction_not_a_setting() -> None:
    question = "What GridBench pass@1 score does the nightly Gridlet baseline hold for the coder model?"
    assert focus_term(question) == "score"
    recipe = "The nightly Gridlet recipe serves the coder model with `--max-len=16384 --utilization=0.9`."
    assert any("'score'" in f for f in span_faults(question, recipe, "Gridlet recipes"))
    for answered in (
        "The nightly Gridlet baseline holds pass@1 of 0.87 for the coder model.",
        "The coder model reaches 87.2% pass@1 on GridBench.",
        "GridBench scores the coder model's baseline nightly.",  # the word itself names it
    ):
        assert not any("'score'" in f for f in span_faults(question, answered, "Gridlet baselines")), answered
    # a version is no score
    assert any("'score'" in f for f in span_faults(question, "Gridlet 2.4.1 serves it.", "Gridlet"))
