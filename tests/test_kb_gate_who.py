# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asking who made or keeps something ('who maintains gridctl') is not answered by a line that
describes the thing and names no one. Hand-made sheets on a tiny lexical index: refused from such a line,
answered once a line saying who maintains it is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import agent_fault
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny gridctl sheet

## The gridctl command-line tool

- The `gridctl` command-line tool (`pip install gridctl`) finds the grid chips of a host and reads runtime metrics from libgrid, such as memory use and duty cycle. ([source](https://example.org/gridctl), checked 2026-12-06)
"""
WHO = """\
# gridctl project

## gridctl project

- The `gridctl` command-line tool is maintained by the Gridworks infrastructure team in its public repository. ([source](https://example.org/gridctl-repo), checked 2026-12-06)
"""
QUESTION = "Who maintains the gridctl command-line tool?"


def test_a_line_naming_no_one_is_a_fault() -> None:
    line = "The `gridctl` command-line tool finds the grid chips of a host and reads metrics from libgrid."
    assert agent_fault(QUESTION, line)
    assert agent_fault(
        "Who wrote the tile kernel that gridrun uses by default?", "The tile kernel splits work in blocks."
    )
    for named in (
        "`gridctl` is maintained by the Gridworks team.",
        "Gridworks's `gridctl` reads chip metrics.",  # an owner's possessive
        "The `gridctl` authors keep a changelog.",
        "Google's `gridctl` finds the chips of a host.",
    ):
        assert agent_fault(QUESTION, named) is None, named
    # only a question asking who is judged
    assert agent_fault("What does gridctl report?", line) is None
    assert agent_fault("Which chips does gridctl find, and who can run it?", line) is None


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("who-bare"), {"gridctl.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("who-full"), {"gridctl.md": SHEET, "project.md": WHO})


def test_a_line_naming_no_one_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "asks who")


def test_a_line_naming_the_maintainer_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "maintained by the Gridworks")


def test_a_vendor_or_maker_picked_is_asked_who() -> None:
    line = "Each Gridbox host has four 100 Gbps NICs, 400 Gbps per host."
    assert agent_fault("Which vendor makes the 100 Gbps NICs of a Gridbox host?", line)
    assert agent_fault("What company manufactures the Gridbox NICs?", line)
    assert agent_fault("Which manufacturer builds Gridbox hosts?", line)
    assert (
        agent_fault("Which vendor makes the Gridbox NICs?", "Gridbox hosts carry NICs made by Nicworks.")
        is None
    )
    # 'which' picking another thing, or a word merely starting with 'vendor', is no question of who
    assert agent_fault("Which NICs does a Gridbox host have?", line) is None
    assert agent_fault("Which vendor-neutral format does gridctl export?", line) is None
