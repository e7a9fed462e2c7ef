# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Round kbref7's first-quote checks: advice asked of a value, what applies when nothing is set (asked
without 'default'), why something was removed, the smallest value, which company makes a thing, and a
version number glued to a model name that is no release. Made-up questions and lines, each with a nearby
line that does answer."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import (
    advice_fault,
    agent_fault,
    lower_bound_fault,
    removal_reason_fault,
    span_faults,
    unset_default_fault,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

DEFINING = "`GRID_WORKERS` (default 2) sets how many threads Gridrun uses to compile programs in parallel."


def test_advice_needs_a_word_of_advice() -> None:
    for question in (
        "Is it recommended to raise GRID_WORKERS above 2 in Gridrun?",
        "Is Gridrun's default of 2 workers enough, or should GRID_WORKERS be raised?",
        "What value does the Gridrun guide suggest for GRID_WORKERS?",
        "Which Gridrun storage tier should I pick for training data?",
    ):
        assert advice_fault(question, DEFINING), question
    for advising in (
        "Raising `GRID_WORKERS` above 2 speeds up compilation on hosts with many cores.",
        "Gridrun recommends `GRID_WORKERS=8` on large hosts.",
        "`GRID_WORKERS` is best left at 2 unless compilation dominates start-up.",
    ):
        assert advice_fault("Is it recommended to raise GRID_WORKERS above 2?", advising) is None, advising


def test_questions_asking_no_advice_are_not_judged_for_it() -> None:
    assert advice_fault("What does GRID_WORKERS set in Gridrun?", DEFINING) is None
    assert advice_fault("Which flag should I use to set Gridrun's workers?", DEFINING) is None


def test_unset_asked_without_the_word_default() -> None:
    listing = "Gridrun's `policy` has presets `full` (most memory saved) and `minimal` (fastest)."
    assert unset_default_fault("Which policy does Gridrun apply when the config sets none?", listing)
    assert unset_default_fault("What disk size does gridrun create use if I leave it out?", listing)
    assert unset_default_fault("What policy is used if you omit --policy?", listing)
    giving = "Gridrun's `policy` defaults to `full`; `minimal` is the fastest preset."
    assert unset_default_fault("Which policy does Gridrun apply when the config sets none?", giving) is None
    # 'default' in the question is `asks_default`'s, not this check's
    assert unset_default_fault("What is the default policy of Gridrun?", listing) is None
    assert unset_default_fault("Which policy saves the most memory?", listing) is None


def test_why_removed_needs_a_cause_or_a_replacement() -> None:
    question = "Why did Gridrun remove the grid_merge switch?"
    bare = "`grid_merge` was removed in Gridrun 0.10: the new path is always used, with no switch back."
    assert removal_reason_fault(question, bare)
    assert removal_reason_fault("Which Gridrun release dropped grid_merge, and why?", bare)
    for why in (
        "`grid_merge` was removed in Gridrun 0.10 because the old path corrupted sharded outputs.",
        "`grid_merge` was deprecated in favour of `grid_map`.",
    ):
        assert removal_reason_fault(question, why) is None, why
    assert removal_reason_fault("When was grid_merge removed?", bare) is None


def test_smallest_value_is_not_a_default_or_a_ceiling() -> None:
    question = "What is the lowest --mem-share Gridserve will start with?"
    assert lower_bound_fault(question, "Gridserve's `mem_share` default of 0.88 leaves room for buffers.")
    assert lower_bound_fault(question, "`--mem-share` may be set up to 0.95.")
    assert lower_bound_fault(question, "`--mem-share` must be 0.5 or more.") is None
    assert lower_bound_fault("What is the largest --mem-share?", "`--mem-share` default 0.88.") is None


def test_which_company_asks_who() -> None:
    line = "A G3 host has four 200 Gbps NICs, 800 Gbps per host."
    assert agent_fault("Which vendor makes the 200 Gbps NICs in a G3 host?", line)
    assert (
        agent_fault("Which vendor makes the NICs in a G3 host?", "The G3 host's NICs are made by Acme.")
        is None
    )
    assert agent_fault("Which NIC speed does a G3 host use?", line) is None


def test_a_number_glued_to_a_name_is_no_release() -> None:
    question = "When will Gridserve support adapters for expert models?"
    named = "Gridserve's adapter example serves `Qwen2.5-3B` with `max_rank=8`."
    assert any("date or version" in f for f in span_faults(question, named, ""))
    released = "Gridserve added adapters for expert models in release 0.12.1."
    assert not any("date or version" in f for f in span_faults(question, released, ""))


SHEET = """\
# Tiny Gridrun sheet

## Gridrun compile settings

- `GRID_WORKERS` (default 2) sets how many threads Gridrun uses to compile programs in parallel. ([source](https://example.org/gridrun-settings), checked 2026-12-07)
"""
ADVICE = """\
# Gridrun tuning

## Gridrun tuning advice

- Gridrun recommends raising `GRID_WORKERS` to 8 when compile threads are the bottleneck. ([source](https://example.org/gridrun-tuning), checked 2026-12-07)
"""
QUESTION = "Is it recommended to raise GRID_WORKERS in Gridrun?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("advice-bare"), {"grid.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("advice-full"), {"grid.md": SHEET, "tuning.md": ADVICE})


def test_a_defining_line_is_refused_for_advice(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "advice")


def test_the_advising_line_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "recommends raising")
