# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Covered questions the gate refused although a retrieved line answers them: 'the name of' or 'the
equivalent of' something is answered by a line naming it, a 'how many' clause naming what a which-question
picks asks for no count, and 'how should I decide whether' asks what tells, not how to act. Hand-made
sheets on a tiny lexical index: answered from such lines, still refused from a nearby line or question.
A numbered name in the plural ('8 H100s') is named by its singular, as the sources write it, a pair of
words ('getter/setter') and a lower-case field name ('roofline_efficiency') by their words in prose, and
a shape of three dimensions ('4x4x8') names a shape."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import _missing_specific, named_in_prose, span_faults
from tpu_runtime.knowledge.question_reading import (
    ATTRIBUTE_UNITS,
    asked_action,
    asks_by_clause,
    asks_count,
    asks_time,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet sheet

## Quillet compiler passes

- Quillet's `ShardSweep` pass recomputes chosen tensors to trade extra compute for lower memory on long runs. ([source](https://example.org/passes), checked 2026-12-06)

## Quillet fold modes

- Quillet's `fold_early=True` setting gives what the Lumen mode of older Quillet releases gave: weights folded before the first step. ([source](https://example.org/fold), checked 2026-12-06)

## Quillet job metrics

- The `quillet_job_restarts` metric shows the times a Quillet job has restarted since it was created. ([source](https://example.org/metrics), checked 2026-12-06)

## Quillet validation

- Quillet was validated on 8 Z300 GPUs, where its sharded mode used 7% less peak memory than its plain mode. ([source](https://example.org/validation), checked 2026-12-06)

## Quillet drivers

- Quillet's driver table covers Z300s and Z400s from driver version 2.1 on. ([source](https://example.org/drivers), checked 2026-12-06)

## Quillet settings

- Quillet's design guide prefers properties rather than getters and setters for its global settings, such as `quillet.fold = True`. ([source](https://example.org/design), checked 2026-12-06)
- In `quillet report` output, fold efficiency is measured step time over `ideal_step_time`, the best a folded step could take. ([source](https://example.org/report), checked 2026-12-06)

## Quillet rings

- A Quillet slice AxBxC can be wired as a ring when every dimension is a multiple of 4, for example 4x4x8 or 8x8x16. ([source](https://example.org/rings), checked 2026-12-06)

## Quillet roofline

- A Quillet job whose arithmetic intensity sits below the ridge point of the roofline is memory bound; above it, compute bound. ([source](https://example.org/roofline), checked 2026-12-06)
"""
NAME = "What is the name of the Quillet pass that trades extra compute for lower memory?"
EQUIVALENT = "Which Quillet setting gives the equivalent of the Lumen mode?"
METRIC = "Which Quillet metric shows how many times a job has restarted?"
DECIDE = "How should I decide whether a Quillet job is memory bound from the roofline?"
PLURAL = "How much less peak memory did Quillet's sharded mode use on 8 Z300s?"
PAIR = "Should a Quillet global setting be a property or a getter/setter pair?"
FIELD = "How is fold_efficiency computed in quillet report output?"
SHAPES = "Which Quillet slice shapes can be wired as a ring?"
CASES = [
    (NAME, "ShardSweep"),
    (SHAPES, "4x4x8"),
    (PAIR, "getters and setters"),
    (FIELD, "ideal_step_time"),
    (PLURAL, "7% less"),
    (EQUIVALENT, "fold_early=True"),
    (METRIC, "quillet_job_restarts"),
    (DECIDE, "ridge point"),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("loosened"), {"quillet.md": SHEET})


def _faults(question: str, line: str) -> list[str]:
    return span_faults(question, line, "Quillet")


def test_a_name_or_equivalent_asked_for_is_given_by_naming_one() -> None:
    assert not _faults(NAME, "Quillet's `ShardSweep` pass recomputes tensors to trade compute for memory.")
    assert not _faults(EQUIVALENT, "Quillet's `fold_early=True` matches the Lumen mode.")
    # a line naming nothing does not give the name, nor one naming the thing in prose alone
    assert any("'name'" in f for f in _faults(NAME, "Quillet has a pass that recomputes tensors for memory."))
    assert any(
        "'equivalent'" in f
        for f in _faults(EQUIVALENT, "Quillet folds weights early, much like the Lumen mode.")
    )
    # an attribute that is not a name is still held to the word ('the latency of')
    latency = "Which Quillet tool shows the latency of each pass?"
    assert any("'latency'" in f for f in _faults(latency, "Quillet's `ShardSweep` runs each pass."))


def test_a_count_clause_naming_what_is_picked_asks_for_no_count() -> None:
    assert asks_by_clause(METRIC)
    assert not asks_count(METRIC)
    assert not asks_time("Which Quillet setting controls how long a job may idle?")
    line = "The `quillet_job_restarts` metric counts the restarts of a Quillet job."
    assert not [f for f in _faults(METRIC, line) if "number" in f]
    # asked on its own, or after an auxiliary or 'and', the count is what the question wants
    assert asks_count("How many times may a Quillet job restart?")
    assert not asks_by_clause("What form do I fill in, and how long does approval take?")
    assert any("number" in f for f in _faults("How many times may a Quillet job restart?", line))


def test_deciding_whether_is_an_inquiry_not_an_action() -> None:
    assert asked_action(DECIDE) is None
    assert asked_action("How do I determine whether a Quillet job is memory bound?") is None
    line = "A Quillet job whose arithmetic intensity sits below the ridge point is memory bound."
    assert not _faults(DECIDE, line)
    # a verb of doing still needs the line to say how
    assert any(
        "'shard'" in f for f in _faults("How should I shard a Quillet job that is memory bound?", line)
    )


def test_a_shape_of_three_dimensions_names_a_shape() -> None:
    assert ATTRIBUTE_UNITS["shapes"].search("for example 4x4x8")
    assert not _faults(SHAPES, "A Quillet slice can be wired as a ring when it is 4x4x8 or 8x8x16.")
    # a line giving no shape in any number of dimensions does not say which
    assert any("'shapes'" in f for f in _faults(SHAPES, "A Quillet slice can be wired as a ring on 4 hosts."))


def test_a_numbered_name_in_the_plural_is_named_by_its_singular() -> None:
    assert _missing_specific(["z300s"], "Quillet ran on 8 Z300 GPUs.") == []
    # another number is not the name, nor is a count of seconds ('10s') a plural of '10'
    assert _missing_specific(["z300s"], "Quillet ran on 8 Z30 GPUs.") == ["z300s"]
    assert _missing_specific(["10s"], "Quillet waits 10 seconds.") == ["10s"]


def test_a_word_pair_or_a_field_name_is_named_by_its_words() -> None:
    line = "Quillet prefers properties rather than getters and setters."
    assert _missing_specific(["getter/setter"], line) == []
    assert named_in_prose("fold_efficiency", "fold efficiency is step time over ideal", frozenset())
    # its words apart, out of order, or only one of them do not name it; nor does a path or a dotted name
    assert _missing_specific(["fold_efficiency"], "the efficiency of a fold is step time over ideal") == [
        "fold_efficiency"
    ]
    assert _missing_specific(["getter/setter"], "Quillet prefers properties to getters.") == ["getter/setter"]
    assert not named_in_prose("quillet.fold", "quillet fold is on", frozenset({"quillet", "fold"}))
    assert not named_in_prose("FOLD_EFFICIENCY", "fold efficiency", frozenset())


@pytest.mark.parametrize(("question", "expected"), CASES)
def test_the_line_naming_or_telling_what_is_asked_answers(
    index: KnowledgeIndex, question: str, expected: str
) -> None:
    assert_quoted(index, question, expected)


def test_a_count_asked_on_its_own_is_still_refused(index: KnowledgeIndex) -> None:
    assert_refused(index, "How many times has a Quillet job restarted since it was created?", "gives none")
