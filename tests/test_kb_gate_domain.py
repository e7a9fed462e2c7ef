# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'TPU' beside a value does not say what the value is of: every sheet is about TPUs, so a time given for a
sampling period next to 'a TPU chip' is no time a service keeps TPU metrics. Hand-made sheets on a tiny
lexical index: refused from such a line, answered once the line giving the value beside the thing asked
about is added."""

from __future__ import annotations

import re

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import DOMAIN_WORDS, span_faults, value_near
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Quillet sheet

## Quillet metrics

- Quillet Monitor's `quillet/duty_cycle` metric is the share of the last sampling period (60 seconds) in which a TPU chip was busy. ([source](https://example.org/metrics), checked 2026-12-06)
"""
ANSWERS = """\
# Quillet retention

## Quillet retention

- Quillet Monitor keeps `quillet/duty_cycle` metric data for 42 days before it deletes it. ([source](https://example.org/retention), checked 2026-12-06)
"""
QUESTION = "How long does Quillet Monitor keep the TPU duty_cycle metric data?"
SAMPLED = "Quillet Monitor's duty_cycle metric is the share of the last sampling period (60 seconds) in which a TPU chip was busy."
TIME = re.compile(r"\d+\s*(?:seconds|days)")


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("domain-bare"), {"quillet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("domain-full"), {"quillet.md": SHEET, "retention.md": ANSWERS}
    )


def test_tpu_beside_a_value_does_not_bind_it_to_the_question() -> None:
    assert "tpu" in DOMAIN_WORDS
    assert not value_near(QUESTION, SAMPLED, TIME)
    assert any("beside what it asks" in f for f in span_faults(QUESTION, SAMPLED, "Quillet metrics"))
    # a word of the question's own beside the value still binds it
    assert value_near(QUESTION, "Quillet Monitor keeps metric data for 42 days.", TIME)
    assert value_near("How long does a TPU chip stay busy?", "A chip stays busy for 60 seconds.", TIME)


def test_a_time_beside_tpu_only_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "beside what it asks")


def test_a_time_beside_what_is_asked_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "42 days")
