# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A figure the user reports in the story before the asking clause ('I only get 1.3x; why not 2x?') is what
they measured, not a word a source must write: the support share and the quote's specific-term check let it
off (`answer_gate.reported_figures`). A figure in the asking clause, a bare number and a name with digits are
read as before. Hand-made sheet on a tiny lexical index (another line writes the figure, as a source writes
'1.5x' somewhere: a figure no source writes is left to the unknown-name check)."""

from __future__ import annotations

import importlib

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.answer_gate import figure_weights, reported_figures
from tpu_runtime.knowledge.question_reading import ASIDE_WEIGHT
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# the module, not the `answer` function the package exports under the same name
answer = importlib.import_module("tpu_runtime.knowledge.answer")

SHEET = """\
# Tiny Frobton duo chips

## Splitting work

- When a Frobton grid is split over the two cores of a duo chip, the speedup stays under 2x if its steps cost different amounts. ([source](https://example.org/duo), checked 2026-12-08)
- A Frobton duo chip holds 24 GiB of memory. ([source](https://example.org/mem), checked 2026-12-08)

## Releases

- Frobton 3.1 compiles kernels 1.3x faster than Frobton 3.0. ([source](https://example.org/rel), checked 2026-12-08)
"""
FIGURE_QUESTION = "I split my Frobton grid over both cores of a duo chip and only see 1.3x; why not 2x?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("figures"), {"frobton.md": SHEET})


def test_story_figures_are_read_and_asked_ones_kept() -> None:
    assert reported_figures("it only gets about 1.5x; why not 2x?") == {"1.5x", "1", "5x"}
    assert reported_figures("ppermute reaches only 50% of the bandwidth, why?") == {"50"}
    assert reported_figures("My job stops after 30 minutes. Why does it stop?") == {"30"}
    assert reported_figures("is the limit 16 GiB?") == set()  # asked, not reported
    assert reported_figures("does v5e have 4 chips per host?") == set()
    assert reported_figures("port 30000 times out, why?") == set()  # a bare number is no figure
    assert reported_figures("my v5e-8 runs 40 ms per step; is 40 ms normal?") == set()  # asked again


def test_only_the_figure_weighs_less_and_none_without_one() -> None:
    weights = {"1.5x": 4.0, "2x": 3.0, "grid": 2.0}
    assert figure_weights("it gets 1.5x; why not 2x?", weights) == {
        "1.5x": pytest.approx(4.0 * ASIDE_WEIGHT),
        "2x": 3.0,  # the asked figure keeps its weight
        "grid": 2.0,
    }
    assert figure_weights("why not 2x?", weights) is None


def test_answered_and_refused_without_the_reading(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, FIGURE_QUESTION, "stays under 2x")
    monkeypatch.setattr(answer_gate, "reported_figures", lambda question: set())
    monkeypatch.setattr(answer, "figure_weights", lambda question, weights: None)
    assert not ask(index, FIGURE_QUESTION).covered


@pytest.mark.parametrize(
    "question",
    [
        # the figure asked, which no line writes
        "Does a Frobton duo chip split over both cores reach 1.3x?",
        # a figure nobody writes asked about the memory line
        "Does a Frobton duo chip hold 48 GiB of memory?",
    ],
)
def test_an_asked_figure_is_still_refused(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch, question: str
) -> None:
    reply = ask(index, question)
    assert not reply.covered, reply.reason
    monkeypatch.setattr(answer, "figure_weights", lambda question, weights: None)
    assert ask(index, question).reason == reply.reason  # the reading changed nothing for it
