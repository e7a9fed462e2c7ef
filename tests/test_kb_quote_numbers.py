# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""A value the question writes as a number ('TP=2') is tokenised away as a term, so a line giving it ('a
tensor-parallel degree of 2') lost to a line sharing more of the other words; a line repeating it now ranks
`NUMBER_BONUS` times. A number that labels a thing ('NUMA node 0', 'PyTorch 2') is no value asked about.
Hand-made sheets on a tiny lexical index; with the bonus off the other line is quoted, so the tests fail
without it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.question_reading import question_numbers
from tpu_runtime.knowledge.quote_choice import repeats_number
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHARDING = """\
# Tiny Gridlet sharding sheet

## Long sequences on Gridlet

- Gridlet recommends context parallelism for long sequences: it shards activations along the sequence, but it communicates more than FSDP. ([source](https://example.org/cp), checked 2026-12-06)
- Gridlet recommends a tensor-parallel degree of 2 for long context: its traffic stays on the fast die-to-die link. ([source](https://example.org/tp), checked 2026-12-06)
"""
QUESTION = "Why does Gridlet recommend TP=2 for long sequences?"


@pytest.fixture(scope="module")
def sharding(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("quote-numbers"), {"sharding.md": SHARDING})


def test_the_line_repeating_the_asked_value_is_quoted(sharding: KnowledgeIndex) -> None:
    assert_quoted(sharding, QUESTION, "degree of 2")


def test_without_the_bonus_the_wordier_line_wins(
    sharding: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "NUMBER_BONUS", 1.0)
    assert_quoted(sharding, QUESTION, "context parallelism")


def test_a_number_labelling_a_thing_is_no_value() -> None:
    assert question_numbers(QUESTION) == {"2"}
    assert question_numbers("How many hosts run a batch of 16 on 8 chips?") == {"16", "8"}
    # labels: a node, a release, a model; names, shapes and ratios hold no number of their own
    assert question_numbers("When should I bind my script to NUMA node 0?") == set()
    assert question_numbers("Should I write a PyTorch 2 custom op for Llama 3?") == set()
    assert question_numbers("Is v5e with bf16 on a 2x2x4 slice 1.5x faster?") == set()


def test_a_line_repeats_a_number_only_on_its_own() -> None:
    assert repeats_number({"2"}, "a tensor-parallel degree of 2 on Ironwood")
    assert repeats_number({"8"}, "each host has 8 chips")
    # glued after letters it is part of a name; the source note's digits do not count
    assert not repeats_number({"2"}, "TP2 matches the chiplets of TPU v7x")
    assert not repeats_number({"2"}, "one host ([source](https://example.org/2), checked 2026-12-06)")
