# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)
"""Once the gate passes, the bullets right before and after each weighed passage in its sheet section are
ranked too (`quote_choice.neighbour_passages`, `answer.with_neighbours`): a sheet says one thing of a subject
in one bullet and what the question asks in the next, and retrieval may return only the first. The gate
still judges the retrieval alone, so a neighbour never turns a refusal into an answer. Hand-made sheet on a
tiny lexical index, with the answering bullet taken out of the search to stand for retrieval missing it."""

from __future__ import annotations

import pytest

from tests.kb_helpers import lexical_index
from tpu_runtime.knowledge import quote_choice
from tpu_runtime.knowledge.answer import compose
from tpu_runtime.knowledge.models import Answer
from tpu_runtime.knowledge.quote_choice import SUPPORT_PASSAGES, neighbour_passages
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny Sprocket sheet

## Sprocket cache

- Sprocket keeps its cache entries, pinned ones and the rest alike, on the local disk of each worker. ([source](https://example.org/cache), checked 2026-12-08)
- Sprocket cache entries that nobody pins are dropped when their worker restarts; pinned entries survive the restart. ([source](https://example.org/evict), checked 2026-12-08)

## Sprocket logs

- Sprocket writes its logs to `/var/log/sprocket` on each worker. ([source](https://example.org/logs), checked 2026-12-08)
"""
SPOOL = """\
# Tiny Sprocket spool sheet

## Spool retention

- Sprocket spool retention covers the spool files of every worker, old and new alike, whichever job wrote them and whichever disk holds them. ([source](https://example.org/retain), checked 2026-12-08)
- Sprocket spool retention keeps spool files for 6 hours after the job that wrote them ends, then deletes them from the worker's disk. ([source](https://example.org/hours), checked 2026-12-08)
"""
HELD = "Sprocket keeps its cache entries"
BESIDE = "nobody pins are dropped"
QUESTION = "What happens to Sprocket cache entries that nobody pins when a worker restarts?"


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("neighbours"), {"sprocket.md": SHEET})


@pytest.fixture(scope="module")
def spool(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("spool"), {"spool.md": SPOOL})


def ask_without(index: KnowledgeIndex, question: str, missing: str) -> Answer:
    """The answer when retrieval returns every passage but the one writing `missing`."""
    found = index.search(question, SUPPORT_PASSAGES)
    found.passages = [p for p in found.passages if missing not in p.text]
    return compose(question, index, found)


def test_the_bullet_beside_the_retrieved_one_is_quoted(sheet: KnowledgeIndex) -> None:
    reply = ask_without(sheet, QUESTION, BESIDE)
    assert reply.covered, reply.reason
    assert BESIDE in reply.citations[0].quote


def test_with_the_reading_off_the_retrieved_bullet_is_quoted(
    sheet: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(quote_choice, "NEIGHBOUR_LINES", False)
    reply = ask_without(sheet, QUESTION, BESIDE)
    assert reply.covered, reply.reason
    assert HELD in reply.citations[0].quote
    assert all(BESIDE not in c.quote for c in reply.citations)


def test_a_refused_question_stays_refused(spool: KnowledgeIndex) -> None:
    # the retrieved bullet lacks the number asked, so the gate refuses, though the bullet beside it gives one
    question = "How many hours does Sprocket spool retention keep spool files?"
    found = spool.search(question, SUPPORT_PASSAGES)
    kept = [p for p in found.passages if "6 hours" not in p.text]
    assert any("6 hours" in p.text for _, p in neighbour_passages(spool, kept))
    reply = ask_without(spool, question, "6 hours")
    assert not reply.covered and reply.citations == [], reply.answer


def test_neighbours_stay_in_their_section(sheet: KnowledgeIndex) -> None:
    found = sheet.search(QUESTION, SUPPORT_PASSAGES)
    held = [p for p in found.passages if HELD in p.text]
    near = neighbour_passages(sheet, held)
    # the next bullet of the section, beside rank 0; the log bullet of the next section is no neighbour
    assert [(rank, BESIDE in p.text) for rank, p in near] == [(0, True)]
    logs = [p for p in found.passages if "/var/log/sprocket" in p.text]
    assert neighbour_passages(sheet, logs) == []
