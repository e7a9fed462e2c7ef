# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'Which Gridlet version contains the fix' asks for a version, as 'in which release' does: a line that
names the fix and says a version will ship, without giving one, does not answer it, while a line giving
the version number does. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults
from tpu_runtime.knowledge.question_reading import asks_when
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet agent sheet

## Gridlet agent crashes

- To stop gridlet_agent crashes on Gridlet nodes, turn off the agent's metrics and upgrade Gridlet once a version ships whose agent contains the fix. ([source](https://example.org/agent), checked 2026-12-06)
"""
ANSWER = """\
# Gridlet releases

## Gridlet releases

- Gridlet version 1.31.2 contains the gridlet_agent fix for the crashes on Gridlet nodes. ([source](https://example.org/release), checked 2026-12-06)
"""
QUESTION = "Which Gridlet version contains the gridlet_agent fix for Gridlet nodes?"


def test_which_x_version_asks_for_a_version() -> None:
    assert asks_when(QUESTION)
    assert asks_when("What JobSet release first exports the restarts metric?")
    # a version named in the question is no version asked for
    assert not asks_when("Which flag does Gridlet version 1.31 add?")
    assert not asks_when("Which Gridlet agent crashes on old nodes?")


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("version-bare"), {"agent.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("version-full"), {"agent.md": SHEET, "release.md": ANSWER})


def test_a_line_promising_a_version_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "gives no date or version")


def test_a_line_giving_the_version_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "version 1.31.2")


def test_a_model_name_gives_no_release() -> None:
    when = "When will Gridlet support adapters for mixture-of-experts models?"
    fault = "gives no date or version"
    # 'Grid2.5-3B' names a model: its dotted number is no release of Gridlet
    modelled = "Gridlet's adapter example serves `Grid2.5-3B-Instruct` with `enable_adapters=True`."
    assert any(fault in f for f in span_faults(when, modelled, "Gridlet adapters"))
    for released in (
        "Gridlet 2.5 added adapters for mixture-of-experts models.",
        "Gridlet v2.5 serves adapters for mixture-of-experts models.",
        "Adapters for mixture-of-experts models arrive in Gridlet 2026.",
    ):
        assert not any(fault in f for f in span_faults(when, released, "Gridlet adapters")), released
