# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A count, limit or time answers a question only when it stands beside what the question asks about:
a line sharing the question's words whose number or time belongs to something else ('two ways', 'the
first build can take minutes') is not an answer. Hand-made sheets on a tiny lexical index: each
question is refused from lines that share its words and answered once the line giving its value beside
its thing is added."""

from __future__ import annotations

import re

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import span_faults, value_near
from tpu_runtime.knowledge.question_reading import asks_main_count
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet sheet

## Quillet uploads

- The Quillet upload tool imports trace files: it reads their profile data in two ways, from a local folder or a bucket. ([source](https://example.org/up), checked 2026-12-05)

## Quillet cache

- Quillet keeps cache entries of compiled graphs in `QUILLET_CACHE_DIR`; the first compile of a graph can take minutes. ([source](https://example.org/cache), checked 2026-12-05)
"""
ANSWERS = """\
# Quillet values

## Quillet values

- The Quillet upload tool imports trace files of at most 2 GB each. ([source](https://example.org/up2), checked 2026-12-05)
- Quillet keeps cache entries in `QUILLET_CACHE_DIR` for 7 days before it expires them. ([source](https://example.org/cache2), checked 2026-12-05)
"""
CASES = [
    # (question, what the answering line quotes, the fault that refuses it without that line)
    ("What is the largest trace file the Quillet upload tool imports?", "2 GB", "beside what it asks"),
    (
        "How long does Quillet keep cache entries in QUILLET_CACHE_DIR before it expires them?",
        "7 days",
        "beside what it asks",
    ),
]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("near-bare"), {"quillet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("near-full"), {"quillet.md": SHEET, "values.md": ANSWERS})


def test_a_count_must_stand_beside_a_word_of_the_question() -> None:
    count = re.compile(r"\d+|\btwo\b")
    assert value_near(
        "How many pools can a Quillet project own?", "A Quillet project owns up to 8 pools.", count
    )
    # the number counts ways, more than three words (function words aside) from what the question names
    assert not value_near(
        "How many pools can a Quillet project own?",
        "Quillet projects are listed in the console, which shows their settings in two ways.",
        count,
    )
    # digits of a source note state nothing
    assert not value_near(
        "How many pools can a Quillet project own?",
        "Quillet pools are listed ([source](https://example.org/p1), checked 2026-12-05).",
        count,
    )


def test_only_a_count_the_question_itself_asks_for_needs_one_beside_it() -> None:
    assert asks_main_count("How many pools can a Quillet project own?")
    assert asks_main_count("What is the largest trace file Quillet imports?")
    assert asks_main_count("What is the maximum number of pools?")
    # a name is asked for; the count is inside its clause
    assert not asks_main_count("Which Quillet setting sets how many pools a project owns?")
    line = "Quillet's `pool_limit` setting caps a project's pools, a two-level quota."
    assert not any(
        "beside" in f
        for f in span_faults("Which Quillet setting sets how many pools a project owns?", line, "")
    )


@pytest.mark.parametrize(("question", "expected", "fault"), CASES)
def test_a_line_giving_the_value_beside_the_thing_asked_for_answers(
    full: KnowledgeIndex, question: str, expected: str, fault: str
) -> None:
    assert_quoted(full, question, expected)


@pytest.mark.parametrize(("question", "expected", "fault"), CASES)
def test_a_line_giving_a_value_of_something_else_is_refused(
    bare: KnowledgeIndex, question: str, expected: str, fault: str
) -> None:
    # refused for where its value stands, not for lacking the question's words
    assert_refused(bare, question, fault)
