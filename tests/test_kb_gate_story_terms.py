# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A specific term only the story before the asking clause names ('preemptible f4 VM went away overnight;
what status does ... show?') need not be named by the quoted line: the symptom is the user's, the status
line answers it for any generation. A term of a leading 'On f4, ...' phrase, which sets the scene, or of the
asking clause itself must still be named. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge.answer_gate import unasked_terms
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton VM sheet

## Preemption

- `frob vm list` shows a preemptible Frobton VM that went away (taken back, often overnight) in the PREEMPTED status until it is deleted. ([source](https://example.org/preempted), checked 2026-12-06)

## Generations

- f4 boards hold four corelets. ([source](https://example.org/f4), checked 2026-12-06)

## Boot

- f4 boards boot in a minute. ([source](https://example.org/f4-boot), checked 2026-12-06)

## Disks

- Frobton disks are attached at creation and sized in GiB. ([source](https://example.org/disks), checked 2026-12-06)

## Zones

- Frobton zones are listed with `frob zones`, one per region. ([source](https://example.org/zones), checked 2026-12-06)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("story"), {"frobton.md": SHEET})


def test_a_term_of_the_story_need_not_be_quoted(index: KnowledgeIndex) -> None:
    assert_quoted(
        index,
        "my preemptible f4 Frobton VM went away overnight; what status does frob vm list show for it?",
        "PREEMPTED",
    )


def test_a_term_of_the_asking_clause_must_be_named(index: KnowledgeIndex) -> None:
    reply = ask(index, "What status does frob vm list show for a preemptible f4 Frobton VM that went away?")
    assert not reply.covered and "no passage line names f4" in reply.reason, reply.reason


def test_which_terms_are_the_story() -> None:
    assert "f4" in unasked_terms("preemptible f4 VM went away overnight; what status does frob vm list show?")
    # a leading phrase sets the scene; an asking clause of too few words of its own leaves the story needed
    assert "f4" not in unasked_terms("On f4, what status does frob vm list show for a preemptible VM?")
    assert "f4" not in unasked_terms("my f4 VM went away overnight; what now?")
    assert "f4" in unasked_terms("What status shows for a board like f4?")
