# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The subject of a 'what X does S <verb>' question says whose value is asked for: a line from a passage
that never names S, while another retrieved passage does, is about a neighbour and does not answer it
('what read throughput does gcsfuse reach' against a decode-throughput line). Hand-made sheets on a tiny
lexical index: refused from a neighbour's line, answered once a line about the subject gives the value."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import subject_fault
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.question_reading import question_subject, yes_no_head
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Fuselet sheet

## Fuselet mounts

- fuselet mounts a Gridlet bucket as a local folder on each Gridlet host. ([source](https://example.org/fuselet), checked 2026-12-06)
"""
DECODE = """\
# Tiny Gridlet sheet

## Gridlet decode

- Gridlet decode reaches a read throughput of 900 tokens per second on one Gridlet host at batch 8. ([source](https://example.org/decode), checked 2026-12-06)
"""
ANSWER = """\
# Fuselet speeds

## Fuselet speeds

- fuselet reaches a read throughput of 1.2 GB/s on a Gridlet host with the default cache. ([source](https://example.org/fuselet-speed), checked 2026-12-06)
"""
QUESTION = "What read throughput does fuselet reach on a Gridlet host?"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("subject-bare"), {"fuselet.md": SHEET, "decode.md": DECODE})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("subject-full"),
        {"fuselet.md": SHEET, "decode.md": DECODE, "speeds.md": ANSWER},
    )


def _passage(text: str, section: str) -> Passage:
    return Passage(
        text=text, source=f"x.md · {section}", score=1.0, kind="curated", path="x.md", line=1,
        section=section, chunk_id=section,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        (QUESTION, "fuselet"),
        ("How much does llguidance structured output reduce decode throughput?", "llguidance"),
        ("How many output tokens per second does SGL-JAX serve for Llama on v5e?", "sgl-jax"),
        # determiners and quantifiers open the subject without naming it
        ("How many reservations can one project hold at most?", "project"),
        ("What does a None entry in a PartitionSpec mean?", "none"),
        # a pronoun is no subject to look for, nor is a question of another shape
        ("What should I set to cap the cache?", None),
        ("How do I mount a bucket with fuselet?", None),
        ("Which tool shows the fan speed of each chip?", None),
    ],
)
def test_the_subject_follows_the_auxiliary(question: str, subject: str | None) -> None:
    assert question_subject(question) == subject


def test_a_subject_only_another_retrieved_passage_names_is_a_fault() -> None:
    decode = _passage("Gridlet decode reaches 900 tokens per second.", "Gridlet decode")
    mounts = _passage("fuselet mounts a Gridlet bucket as a local folder.", "Fuselet mounts")
    assert "'fuselet'" in (subject_fault(QUESTION, decode, [decode, mounts]) or "")
    # the quoted passage naming it, or no retrieved passage naming it (sources may call it otherwise)
    assert subject_fault(QUESTION, mounts, [decode, mounts]) is None
    assert subject_fault(QUESTION, decode, [decode]) is None


def test_a_neighbour_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "the question's subject")


def test_a_line_about_the_subject_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "1.2 GB/s")


@pytest.mark.parametrize(
    ("question", "head"),
    [
        ("Does the Gridlet dynamic leak finder work for Fuselet mounts on a Gridlet host?", "finder"),
        ("Can fuselet handle buckets of a million files?", "fuselet"),
        ("Does Gridlet support fuselet mounts?", "gridlet"),
        # another shape, or no verb of working or support
        ("Does fuselet cache reads?", None),
        ("Is the leak finder on by default?", None),
    ],
)
def test_a_yes_no_subject_ends_before_its_verb(question: str, head: str | None) -> None:
    assert yes_no_head(question) == head


def test_a_yes_no_subject_only_another_retrieved_passage_names_is_a_fault() -> None:
    question = "Does the Gridlet dynamic leak finder work for Fuselet mounts on a Gridlet host?"
    mounts = _passage(
        "fuselet mounts a Gridlet bucket as a local folder on each Gridlet host.", "Fuselet mounts"
    )
    finder = _passage("The Gridlet leak finder reports buffers that outlive their kernel.", "Leak finder")
    assert "'finder'" in (subject_fault(question, mounts, [mounts, finder]) or "")
    # the finder's own passage, or no retrieved passage naming it, is no fault
    assert subject_fault(question, finder, [mounts, finder]) is None
    assert subject_fault(question, mounts, [mounts]) is None
