# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'How many times faster is X than Y?' asks a ratio, read as 'how much faster' is: the attribute a line
must speak to is the comparative's ('twice as fast' does), not 'times', which no line giving a ratio
writes; 'how many times does X retry' still asks a count of times. Hand-made sheet on a tiny lexical
index."""

from __future__ import annotations

import re

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import question_reading
from tpu_runtime.knowledge.question_reading import focus_term
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton disks

## Disk speed

- The Frobton Mark 2 disk reads twice as fast as the Mark 1 disk: 800 against 400 MB/s per drive. ([source](https://example.org/disks), checked 2026-12-07)

## Retries

- Frobton retries a failed disk read after a short backoff. ([source](https://example.org/retries), checked 2026-12-07)
"""
QUESTION = "Frobton disk read speed: how many times faster is the Mark 2 disk than the Mark 1 disk?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("ratio"), {"frobton.md": SHEET})


def test_a_ratio_asks_what_the_comparative_is_of() -> None:
    assert focus_term(QUESTION) == focus_term("How much faster is the Mark 2 disk?") == "faster"
    assert focus_term("How many times as much HBM does v6e have?") == "hbm"
    assert focus_term("How many times more HBM does v6e have?") == "hbm"
    # a count of times keeps 'times'
    assert focus_term("How many times does Frobton retry a failed disk read?") == "times"
    assert focus_term("How many times per second does the agent poll?") == "times"


def test_the_ratio_line_is_quoted_and_refused_without_the_rule(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "twice as fast")
    monkeypatch.setattr(question_reading, "_RATIO_RE", re.compile(r"(?!)"))
    reply = ask(index, QUESTION)
    assert not reply.covered and "'times'" in reply.reason, reply.reason


def test_a_ratio_of_something_the_line_does_not_give_is_still_refused(index: KnowledgeIndex) -> None:
    reply = ask(index, "Frobton disk price: how many times cheaper is the Mark 2 disk than the Mark 1 disk?")
    assert not reply.covered and "'cheaper'" in reply.reason, reply.reason


def test_a_count_of_tries_is_still_refused_by_a_line_giving_none(index: KnowledgeIndex) -> None:
    reply = ask(index, "How many times does Frobton retry a failed disk read?")
    assert not reply.covered, reply.answer
