# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking which release first did something ('which libgrid version first supported the G6
chip') is not answered by a line about some release doing something else there ('libgrid 0.0.6 ...
fixes a compiler bug on the G6 chip'). Hand-made sheets on a tiny lexical index:
refused from such a line, answered once a line saying which release added it is in."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import first_release_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny libgrid changelog

## libgrid releases

- The libgrid version 0.0.6 supported by gridjax 0.4.37 fixes a compiler bug on the G6 chip. ([source](https://example.org/changelog), checked 2026-12-06)
"""
ADDED = """\
# libgrid chip support

## libgrid chip support

- libgrid version 0.0.4 first supported the G6 chip; older libgrid releases do not see it. ([source](https://example.org/support), checked 2026-12-06)
"""
QUESTION = "Which libgrid version first supported the G6 chip?"


def test_a_release_doing_something_else_is_a_fault() -> None:
    line = "gridjax 0.4.37 pinned libgrid 0.0.6, a release that fixes a compiler bug on the G6 chip."
    assert first_release_fault(QUESTION, line)
    assert first_release_fault("In which gridjax release was gridjax.scan first added?", line)
    for ok in (
        "libgrid 0.0.4 added G6 support.",
        "G6 needs libgrid 0.0.4 or later.",
        "Since libgrid 0.0.4 the G6 chip is supported.",
    ):
        assert first_release_fault(QUESTION, ok) is None, ok
    # only a question asking for the first release is judged
    assert first_release_fault("Which libgrid version does gridjax 0.4.37 pin?", line) is None
    assert first_release_fault("What is the first step of a G6 install?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("first-release-bare"), {"changelog.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("first-release-full"), {"changelog.md": SHEET, "support.md": ADDED}
    )


def test_a_release_doing_something_else_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "first did something")


def test_the_release_that_added_it_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "first supported the G6 chip")
