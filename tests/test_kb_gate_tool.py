# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A question asked of a program or service ('How do I drain a Gridchip node with kubectl?', 'Which
tpu-tune subcommand ...') is not answered by a line giving the same task with another tool. Hand-made
sheets on a tiny lexical index: refused from a gcloud line, answered once a kubectl line is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import SECTION_NEAR, Span, gate_faults, tool_fault, tools_asked
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Gridchip sheet

## Draining Gridchip nodes

- `gcloud compute gridchips drain NODE --zone=ZONE` drains a Gridchip node before maintenance, moving its jobs to other nodes. ([source](https://example.org/g3-drain), checked 2026-12-06)
"""
KUBECTL = """\
# Gridchip on Kubernetes

## Draining Gridchip nodes with kubectl

- `kubectl drain NODE --ignore-daemonsets` drains a Gridchip node before maintenance, evicting its Pods to other nodes. ([source](https://example.org/g3-kubectl), checked 2026-12-06)
"""
QUESTION = "How do I drain a Gridchip node before maintenance with kubectl?"
GCLOUD_LINE = "`gcloud compute gridchips drain NODE --zone=ZONE` drains a Gridchip node before maintenance."


def test_which_tools_a_question_asks_of() -> None:
    assert tools_asked(QUESTION) == {"kubectl"}
    assert tools_asked("Which tpu-tune subcommand tunes the block sizes?") == {"tpu-tune"}
    assert tools_asked("Which GKE machine type do G3 VMs use?") == {"gke"}
    assert tools_asked("Where is the Power Viewer tool in XProf?") == {"xprof"}
    # another way asked for, a service run on, a leading frame: not required of the line
    assert tools_asked("How do I mount a share on a G3 VM by hand, without XPK?") == set()
    assert tools_asked("Should Shardy be turned off for a server on Pathways?") == set()
    assert tools_asked("Using xpk, how do I keep a job alive when a slice goes away?") == set()
    # a command-line program is asked of wherever it stands
    assert tools_asked("How do I run maintenance on kubectl?") == {"kubectl"}


def test_a_line_not_naming_the_tool_is_a_fault() -> None:
    assert tool_fault(QUESTION, GCLOUD_LINE)
    assert tool_fault(
        "Is there a gcloud flag that joins two slices?", "MaxText's mesh spans slices over DCN."
    )
    assert tool_fault(QUESTION, "`kubectl drain NODE` drains a node.") is None
    # the heading names it for the line
    assert tool_fault(QUESTION, "`drain NODE` drains a node.", "Draining nodes with kubectl") is None
    assert tool_fault("How do I drain a Gridchip node?", GCLOUD_LINE) is None


def _line(text: str, line: int, section: str = "Draining nodes") -> Passage:
    return Passage(
        text=text,
        source=f"x.md:{line}",
        score=1.0,
        kind="curated",
        path="x.md",
        section=section,
        line=line,
        chunk_id=f"x.md:{line}",
    )


def test_a_retrieved_line_next_to_the_quote_may_name_the_tool() -> None:
    scene = _line("Draining a Gridchip node moves its jobs to other nodes before maintenance.", 10)
    command = _line("Run `kubectl drain NODE` to do it.", 11)
    first = Span(text=scene.text, passage=scene, overlap=1.0)
    assert not [f for f in gate_faults(QUESTION, first, [scene, command]) if "kubectl" in f]
    # not when it is too far away or under another section, nor when not retrieved
    far = command.model_copy(update={"line": 10 + SECTION_NEAR + 1})
    other = command.model_copy(update={"section": "Upgrading nodes"})
    for passages in ([scene, far], [scene, other], [scene]):
        assert [f for f in gate_faults(QUESTION, first, passages) if "kubectl" in f]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("tool-bare"), {"grid.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("tool-full"), {"grid.md": SHEET, "k8s.md": KUBECTL})


def test_a_gcloud_line_is_refused_for_a_kubectl_question(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "asks about kubectl")


def test_the_gcloud_line_answers_a_question_naming_no_tool(bare: KnowledgeIndex) -> None:
    assert_quoted(
        bare, "How do I drain a Gridchip node before maintenance?", "gcloud compute gridchips drain"
    )


def test_the_kubectl_line_answers(full: KnowledgeIndex) -> None:
    assert_quoted(full, QUESTION, "kubectl drain NODE")
