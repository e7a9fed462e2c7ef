# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question held to one host, slice, VM or node ('on one slice only', 'a single-host run') is not answered by a
line about several of them ('multi-host runs', 'Multislice jobs') that never says one. Hand-made sheets on a tiny
lexical index and lines judged alone."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import single_scope_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SEVERAL = """\
# Tiny Gridscope sheet

## Gridscope

- The Gridscope viewer shows the barrier waits of multi-host Gridrun jobs, one track per host. ([source](https://example.org/gridscope), checked 2026-12-07)
"""
ONE = """\
# Gridscope on one host

## Gridscope on a single host

- On a single host, the Gridscope viewer shows the barrier waits of a Gridrun job per core instead. ([source](https://example.org/gridscope-one), checked 2026-12-07)
"""
QUESTION = "What does the Gridscope viewer show for a Gridrun job on one host only?"


def test_a_line_about_several_is_a_fault() -> None:
    line = "The Gridscope viewer shows the barrier waits of multi-host Gridrun jobs."
    assert "single host" in (single_scope_fault(QUESTION, line) or "")
    assert single_scope_fault(
        "How do I run Gridrun on a single slice?", "Gridrun's Multislice mode joins slices."
    )
    assert single_scope_fault("Can one VM use Gridrun?", "Gridrun needs several VMs.")
    # a line saying one as well, a line about the same unit in no count, another unit
    assert single_scope_fault(QUESTION, "Gridscope works on one host and on multi-host jobs.") is None
    assert single_scope_fault(QUESTION, "The Gridscope viewer shows each host's barrier waits.") is None
    assert single_scope_fault(QUESTION, "Gridscope reads multi-slice traces.") is None
    # a question asking about several, or about both, is not held to one
    assert single_scope_fault("What does Gridscope show for multi-host jobs?", line) is None
    assert single_scope_fault("Does Gridscope differ between one host and multi-host jobs?", line) is None
    # one node pool is no single node
    assert (
        single_scope_fault("How do I add one node pool?", "Multi-node pools need a placement policy.") is None
    )


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("single-scope-bare"), {"gridscope.md": SEVERAL})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("single-scope-full"), {"gridscope.md": SEVERAL, "one.md": ONE}
    )


def test_a_line_about_several_hosts_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "single host")


def test_the_question_on_several_hosts_is_answered(bare: KnowledgeIndex) -> None:
    assert_quoted(bare, "What does the Gridscope viewer show for multi-host Gridrun jobs?", "multi-host")


def test_a_line_about_one_host_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "On a single host")
