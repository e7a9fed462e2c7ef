# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The gate's checks on what a question asks for beyond its words: a limit ('what is the largest X'),
a time ('how long does X take'), a default ('what X is used when --x is not given') and a count whose
only digits sit in the line's source note. A line sharing the question's words but not giving that
value is not an answer. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults
from tpu_runtime.knowledge.question_reading import (
    asks_count,
    asks_date,
    asks_default,
    asks_limit,
    asks_time,
    attribute_of,
    focus_term,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# Lines that share the questions' words without giving the value asked for; each question below is
# refused from these alone and answered once the line giving its value is added (`ANSWERS`).
SHEET = """\
# Tiny Gridlet sheet

## Gridlet priorities

- A Gridlet shard annotation accepts a priority as a suffix such as `p1`; the largest priority wins. ([source](https://example.org/prio), checked 2026-12-04)
- An empty Gridlet shard annotation must not carry a priority. ([source](https://example.org/prio2), checked 2026-12-04)

## Gridlet bundles

- Compiling a long Gridlet bundle takes 4 CPU cores and a local disk. ([source](https://example.org/bundle), checked 2026-12-04)

## Gridlet benchmark

- The Gridlet tutorial benchmarks a server with `gridlet bench --prompts 1000 --rate 5`. ([source](https://example.org/bench), checked 2026-12-04)

## Gridlet quotas

- Gridlet quotas apply to every pool a project owns ([source](https://example.org/quota), checked 2026-12-04) and are raised on request.
"""
ANSWERS = """\
# Gridlet values

## Gridlet values

- A Gridlet shard annotation accepts priorities from 0 to 7. ([source](https://example.org/prio3), checked 2026-12-04)
- Compiling a Gridlet bundle takes about 12 minutes. ([source](https://example.org/bundle2), checked 2026-12-04)
- `gridlet bench --rate` defaults to 10 requests per second. ([source](https://example.org/bench2), checked 2026-12-04)
- A Gridlet project owns up to 8 pools. ([source](https://example.org/pools), checked 2026-12-04)
- The Gridlet Health tool shows the temperature of each host. ([source](https://example.org/health), checked 2026-12-04)
"""
CASES = [
    # (question, what the answering line quotes, the fault that refuses it without that line)
    ("What is the largest priority a Gridlet shard annotation accepts?", "from 0 to 7", "gives none"),
    ("How long does compiling a Gridlet bundle take?", "12 minutes", "gives no time"),
    ("What rate does gridlet bench use when --rate is not given?", "defaults to 10", "by default"),
    ("How many pools can a Gridlet project own?", "up to 8 pools", "gives none"),
]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("asks-bare"), {"gridlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("asks-full"), {"gridlet.md": SHEET, "values.md": ANSWERS})


def test_what_each_question_asks_for_is_recognised() -> None:
    assert asks_limit("What is the largest nesting depth Gridlet accepts?")
    assert asks_limit("What's the minimum pool size?")
    assert not asks_limit("What is a Gridlet priority?")
    assert asks_time("How long does compiling a Gridlet bundle take?")
    assert not asks_time("How long can a Gridlet prompt be?")
    assert asks_default("What warmup mode does gridlet bench use when --warmup is not given?")
    assert asks_default("What is the default rate of gridlet bench?")
    assert not asks_default("How do I give a kernel more memory than the default?")


def test_the_attribute_a_which_question_asks_about_must_be_named() -> None:
    assert attribute_of("Which XProf tool shows the fan speed of each TPU chip?") == "fan"
    # an idiom after a preposition is no attribute asked about
    assert attribute_of("Which pass recomputes values at the price of more compute?") is None
    # 'how many X / what is the X of' is the focus check's
    assert attribute_of("What is the peak of a v4 chip?") is None
    question = "Which Gridlet tool shows the fan speed of each host?"
    assert any(
        "'fan'" in f for f in span_faults(question, "The Gridlet Health tool lists each host.", "Tools")
    )
    assert not span_faults(question, "The Gridlet Fans tool shows each host's fan speed in rpm.", "Tools")


def test_a_line_naming_the_attribute_answers_which_tool(full: KnowledgeIndex) -> None:
    assert_quoted(full, "Which Gridlet tool shows the temperature of each host?", "Health tool")


def test_a_checked_date_in_a_source_note_is_no_release() -> None:
    question = "When will Gridlet support quota transfers?"
    noted = (
        "Gridlet quota transfers are planned ([source](https://example.org/t), checked 2026-12-04) for pools"
    )
    assert any("no date or version" in f for f in span_faults(question, noted, "Gridlet quotas"))
    assert not span_faults(question, "Gridlet supports quota transfers since version 0.9.", "Gridlet quotas")


def test_digits_in_a_source_note_are_no_count() -> None:
    line = "Gridlet quotas apply to every pool a project owns ([source](https://example.org/q1), checked 2026-12-04) and are raised"
    faults = span_faults("How many pools can a Gridlet project own?", line, "Gridlet quotas")
    assert any("number" in f for f in faults), faults
    assert not span_faults(
        "How many pools can a Gridlet project hold?", "A Gridlet project holds up to 8 pools.", ""
    )


@pytest.mark.parametrize(("question", "expected", "fault"), CASES)
def test_a_line_giving_the_value_asked_for_answers(
    full: KnowledgeIndex, question: str, expected: str, fault: str
) -> None:
    assert_quoted(full, question, expected)


@pytest.mark.parametrize(("question", "expected", "fault"), CASES)
def test_a_line_sharing_the_words_but_not_the_value_is_refused(
    bare: KnowledgeIndex, question: str, expected: str, fault: str
) -> None:
    # refused for lacking the value, not for lacking the question's words
    assert_refused(bare, question, fault)


def test_a_yes_or_no_question_naming_a_number_of_things_asks_for_no_count() -> None:
    # the clause asking opens with an auxiliary: it asks whether, not how many
    assert not asks_count("When I switch launchers, do I still pass the number of workers?")
    assert not asks_count("Does gridlet stat give the exact number of bytes sent?")
    # 'how many' always asks for a count; so do 'what is the number' and 'is there a limit on the number'
    assert asks_count("Do you know how many pools a project owns?")
    assert asks_count("After an upgrade, what is the number of pools a project owns?")
    assert asks_count("Is there a limit on the number of pools a Gridlet project owns?")
    assert asks_count("Does Gridlet say what number of pools a project owns?")


def test_a_yes_or_no_question_is_answered_by_a_line_without_a_number() -> None:
    line = "With `gridlet launch` the worker count comes from the pool, so `--workers` is no longer passed."
    question = "When I switch to gridlet launch, do I still pass the number of workers?"
    assert not any("number" in f for f in span_faults(question, line, "Gridlet launch"))
    # asked how many, the same line gives no count
    faults = span_faults("What is the number of workers gridlet launch starts?", line, "Gridlet launch")
    assert any("gives none" in f for f in faults), faults


def test_a_kind_of_name_asked_for_is_given_by_a_line_naming_one() -> None:
    question = "What's the pip command to get Gridlet running on a pool?"
    assert focus_term(question) is None
    assert not span_faults(
        question, "Install Gridlet on a pool with `uv pip install gridlet-pool`.", "Install"
    )
    # a line naming no command still does not answer it
    faults = span_faults(question, "Gridlet runs on every pool once installed.", "Install")
    assert any("names none" in f for f in faults), faults
    # 'how many flags' asks for a count of them: the word stays the attribute asked for
    assert focus_term("How many flags does gridlet bench take?") == "flags"


def test_a_question_asking_for_a_date_needs_a_date_not_a_release() -> None:
    question = "On what date was the first Gridlet image published?"
    assert asks_date(question) and asks_date("In which year did Gridlet ship?")
    assert not asks_date("Which release of Gridlet added pools?")
    versioned = "The Gridlet image `gridlet:0.8.1-rev1` covers every pool."
    assert any("date" in f for f in span_faults(question, versioned, "Gridlet images"))
    assert not span_faults(
        question, "The first Gridlet image was published on March 3, 2025.", "Gridlet images"
    )
