# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A byte rate is written 'GB/s' or 'GBps' (the sheets use both, from the pages they restate), so a question
asking in one spelling is answered by a line giving the figure in the other; the specific-term check reads
them as one unit. A unit that is no byte rate of the same size ('Gbit/s', 'TB/s' for a 'GBps' line) is not
joined. Hand-made sheets on tiny lexical indexes."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.question_reading import rate_forms
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton links

## Link bandwidth

- Each Frobton link carries 300 GBps in each direction, 600 GBps both ways together. ([source](https://example.org/link), checked 2026-12-07)
"""
DISKS = """\
# Scratch disks

## Throughput

- A scratch disk reads 2 GB/s and writes 1 TB/s in bursts, 5 Gbit/s sustained. ([source](https://example.org/disk), checked 2026-12-07)
"""
QUESTION = "How much does one Frobton link carry in GB/s in each direction?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("rate-spellings"), {"frobton.md": SHEET, "disks.md": DISKS})


@pytest.mark.parametrize(
    ("token", "forms"),
    [
        ("gb/s", {"gbps"}),
        ("gbps", {"gb/s"}),
        ("tib/s", {"tibps"}),
        ("gbit/s", set()),
        ("gb", set()),
        ("fps", set()),
    ],
)
def test_a_byte_rate_has_its_other_spelling(token: str, forms: set[str]) -> None:
    assert rate_forms(token) == forms


def test_a_rate_asked_in_one_spelling_is_answered_from_the_other(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "300 GBps")
    monkeypatch.setattr(answer_gate, "rate_forms", lambda token: set())
    reply = ask(index, QUESTION)
    assert not reply.covered and "gb/s" in reply.reason, reply.reason


def test_a_rate_in_bits_is_still_refused(index: KnowledgeIndex) -> None:
    reply = ask(index, "How much does one Frobton link carry in Gbit/s in each direction?")
    assert not reply.covered and "gbit/s" in reply.reason, reply.reason
