# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking why a default was chosen ('why is GRIDLET_CHUNKS 1024 by default') is not answered by a
line that only lists that default beside its siblings' defaults: the reader already has the value. Hand-made
sheets on a tiny lexical index: refused from such a line, answered once a line giving the cause is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import default_reason_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet offload sheet

## Gridlet offload variables

- Gridlet offloads its cache to host memory under `GRIDLET_*` variables: `GRIDLET_CHUNKS` (default 1024 host chunks), `GRIDLET_STAGING` (default 128 staging blocks) and `GRIDLET_THREADS` (default 1). ([source](https://example.org/offload), checked 2026-12-06)
"""
CAUSE = """\
# Gridlet offload sizing

## Gridlet offload sizing

- `GRIDLET_CHUNKS` is 1024 by default because 1024 host chunks of cache fill one host's pinned memory region exactly. ([source](https://example.org/sizing), checked 2026-12-06)
"""
QUESTION = "Why is GRIDLET_CHUNKS 1024 by default in Gridlet?"


def test_a_listed_default_is_no_reason_for_it() -> None:
    line = "`GRIDLET_CHUNKS` (default 1024 host chunks) sizes the host cache."
    assert default_reason_fault(QUESTION, line)
    assert default_reason_fault(
        "Why does GRIDLET_RATIO default to 0.5?", "`GRIDLET_RATIO` (default 0.5) is a ratio."
    )
    for ok in (
        "`GRIDLET_CHUNKS` defaults to 1024 because that fills the pinned region.",  # a cause
        "`GRIDLET_CHUNKS` defaults to 1024 to keep the pinned region full.",  # a purpose
        "`GRIDLET_CHUNKS` defaults to 1024, so one host's pinned memory is used whole.",
        "`GRIDLET_CHUNKS` is 1024 host chunks.",  # no default stated: other checks judge it
    ):
        assert default_reason_fault(QUESTION, ok) is None, ok
    # only a 'why' question about a default is judged here
    assert default_reason_fault("What is the default of GRIDLET_CHUNKS?", line) is None
    assert default_reason_fault("Why is GRIDLET_CHUNKS so slow?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("default-reason-bare"), {"offload.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("default-reason-full"), {"offload.md": SHEET, "sizing.md": CAUSE}
    )


def test_a_line_listing_the_default_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "why a default was chosen")


def test_a_line_giving_the_cause_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "because 1024 host chunks")
