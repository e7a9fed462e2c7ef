# ruff: noqa: E501  (fact-sheet lines are long by design)
"""'What's the metric called?' asks the metric's name: the attribute a line must name is the metric, not
'called', which no line giving a name writes. Another thing asked by name ('the dashboard') is still
refused by a line that never names it. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import question_reading
from tpu_runtime.knowledge.question_reading import focus_term
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Frobton jobs

## Monitoring

- Frobton exports each job's restart count as the metric `frob_job_restarts_total`. ([source](https://example.org/metrics), checked 2026-12-07)
"""
QUESTION = "How do I count Frobton job restarts, what's the metric called?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("naming-words"), {"frobton.md": SHEET})


def test_the_named_thing_is_the_focus() -> None:
    assert focus_term(QUESTION) == "metric"
    assert focus_term("What is the scheduler named in GKE?") == "scheduler"
    assert focus_term("What is the metric unit of a job?") == "unit"  # a plain attribute keeps its head


def test_the_metric_name_is_answered_and_refused_without_the_rule(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "frob_job_restarts_total")
    monkeypatch.setattr(question_reading, "NAMING_WORDS", frozenset())
    reply = ask(index, QUESTION)
    assert not reply.covered and "'called'" in reply.reason, reply.reason


def test_another_thing_asked_by_name_is_still_refused(index: KnowledgeIndex) -> None:
    reply = ask(index, "How do I watch Frobton job restarts, what's the dashboard called?")
    assert not reply.covered and "dashboard" in reply.reason, reply.reason
