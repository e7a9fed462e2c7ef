# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking the default of a named setting ('is GRIDLET_SINGLE_HOST on by default') is not
answered by a line that names it among siblings whose defaults it gives ('`GRIDLET_PORT` (default 9999),
... `GRIDLET_SINGLE_HOST` traces one host only'): those defaults belong to the settings beside them. Hand-made
sheets on a tiny lexical index: refused from such a line, answered once a line giving its own default is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import setting_default_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridlet profiling sheet

## Gridlet profiling variables

- Gridlet profiling variables: `GRIDLET_PROFILER=1` starts the profiler server on `GRIDLET_PORT` (default 9999), `GRIDLET_TRACE_DIR` stores traces, and `GRIDLET_SINGLE_HOST` traces one host only. ([source](https://example.org/profiling), checked 2026-12-06)
"""
OWN = """\
# Gridlet single-host tracing

## Gridlet single-host tracing

- `GRIDLET_SINGLE_HOST` is off by default, so every host of a Gridlet job is traced unless it is set. ([source](https://example.org/single-host), checked 2026-12-06)
"""
QUESTION = "Is GRIDLET_SINGLE_HOST on or off by default in Gridlet?"
LINE = "`GRIDLET_PORT` (default 9999), `GRIDLET_TRACE_DIR` stores traces, and `GRIDLET_SINGLE_HOST` traces one host only."


def test_a_sibling_default_is_a_fault() -> None:
    assert setting_default_fault(QUESTION, LINE)
    assert setting_default_fault("What is the default value of GRIDLET_SINGLE_HOST?", LINE)
    # the setting's own default, also when it shares it with the setting listed before it
    assert setting_default_fault("What is the default value of GRIDLET_PORT?", LINE) is None
    both = "`GRIDLET_A` and `GRIDLET_B`, both False by default, pick the backend."
    assert setting_default_fault("What are the default values of GRIDLET_A and GRIDLET_B?", both) is None
    # a default after the setting with no other setting between is its own, a command qualifying it
    qualified = "`--max-tries` on `gridctl job create` (default 0) retries a job that fails."
    assert (
        setting_default_fault("What is the default of --max-tries on gridctl job create?", qualified) is None
    )
    # a line stating no default, or not naming the setting, is left to the other checks
    assert setting_default_fault(QUESTION, "`GRIDLET_SINGLE_HOST` traces one host only.") is None
    assert setting_default_fault(QUESTION, "`GRIDLET_PORT` (default 9999) sets the port.") is None
    # 'default' far from the name asks something else ('besides the default pass-through')
    aside = "Which kinds can a gridlet_rule declare for custom splitting besides the default pass-through?"
    assert (
        setting_default_fault(aside, "A `gridlet_rule` declares kinds; the default is pass-through.") is None
    )


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("sibling-default-bare"), {"profiling.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("sibling-default-full"), {"profiling.md": SHEET, "single.md": OWN}
    )


def test_a_line_giving_siblings_defaults_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "settings listed beside")


def test_a_line_giving_its_own_default_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "is off by default")
