# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'Is it recommended to raise X above 1?' is not answered by a line saying only what X does and its default:
the verdict asked for is unsaid. Hand-made sheets on a tiny lexical index: refused from the setting's line,
answered once a line giving advice on it is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import recommended_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet compile sheet

## Gridlet compile settings

- `GRIDLET_COMPILE_THREADS` (default 1) sets how many threads Gridlet compiles programs with; raised above 1 it compiles them in parallel. ([source](https://example.org/compile), checked 2026-12-07)
"""
ADVICE = """\
# Gridlet compile tuning

## Gridlet compile tuning

- Raising `GRIDLET_COMPILE_THREADS` above 1 is recommended on hosts with many idle cores; it shortens warm-up. ([source](https://example.org/compile-tuning), checked 2026-12-07)
"""
QUESTION = "Is it recommended to raise GRIDLET_COMPILE_THREADS above 1 in Gridlet?"


def test_a_line_giving_no_advice_is_a_fault() -> None:
    line = "`GRIDLET_COMPILE_THREADS` (default 1) sets how many threads Gridlet compiles programs with."
    assert recommended_fault(QUESTION, line)
    assert recommended_fault("Is GRIDLET_COMPILE_THREADS=4 advisable on small hosts?", line)
    for answered in (
        "Raising it above 1 is recommended on large hosts.",
        "You should keep it at 1 on small hosts.",
        "Set `GRIDLET_COMPILE_THREADS=4` on large hosts.",
        "Avoid values above the core count.",
    ):
        assert recommended_fault(QUESTION, answered) is None, answered
    # not a yes/no question on advice: what a recipe recommends is a value, which the line's own check judges
    assert recommended_fault("What thread count does the Gridlet recipe recommend?", line) is None
    assert recommended_fault("What does GRIDLET_COMPILE_THREADS do?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("recommended-bare"), {"compile.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("recommended-full"), {"compile.md": SHEET, "tuning.md": ADVICE}
    )


def test_the_setting_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives no advice")
    # what the setting does is still answered from it
    assert_quoted(bare, "What does GRIDLET_COMPILE_THREADS set in Gridlet?", "sets how many threads")


def test_a_line_giving_advice_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "is recommended on hosts")


def test_a_choice_asked_for_advice_needs_advice() -> None:
    listing = "`gridlet store create` takes `--tier` (BASIC, ZONAL, REGIONAL) and `--size` (GB)."
    question = "Which Gridlet store tier should I pick for training data?"
    assert recommended_fault(question, listing)
    assert recommended_fault(question, "Pick ZONAL for training data; BASIC is too slow.") is None
    # a 'which' question that asks no advice is left to the other checks
    assert recommended_fault("Which tiers does gridlet store create take?", listing) is None
    assert recommended_fault("Which tier do I pass to gridlet store create?", listing) is None
