# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A name the question gives that no retrieved passage writes means the question is about something else of
that name, unless the name is a common word of the sources ('CPU', 'VM') that the question writes right after
a word the passages do write ('its host CPU' where a line says 'connects to its host'): the two words name one
thing. A rare name, or a common one standing alone or led by a word no passage writes, still refuses."""

from __future__ import annotations

import pytest

from tests.kb_helpers import lexical_index, sheet_line
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.answer_gate import COMMON_NAME_SHARE, elsewhere_fault
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.question_reading import _df, name_terms
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

_SOURCE = "([source](https://example.org/frob), checked 2026-12-07)"
# 'CPU' in 12 of 413 lines (a common word of these sources), 'Zorblat' in one
SHEET = (
    "# Tiny Frobton hosts\n\n## Hosts\n\n"
    + "".join(
        f"- Frobton host model {i} has {8 * i} CPU cores and {16 * i} GiB of memory. {_SOURCE}\n"
        for i in range(1, 13)
    )
    + f"- The Zorblat board sits beside the Frobton host. {_SOURCE}\n\n## Firmware\n\n"
    + "".join(f"- Frobton board revision {i} ships with firmware {i}.0. {_SOURCE}\n" for i in range(1, 401))
)

LINK = "- Each Frobton chip connects to its host over a Glimmer Gen9 link. ([source](https://example.org/link), checked 2026-12-07)"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("common-names"), {"frobton.md": SHEET})


def _retrieved() -> list[Passage]:
    return [sheet_line(LINK, 3, "Tiny Frobton chips \u203a Links", "knowledge/chips.md")]


def _fault(index: KnowledgeIndex, question: str) -> str | None:
    return elsewhere_fault(name_terms(question), [], _retrieved(), index, question)


def test_the_names_are_as_common_as_the_test_needs(index: KnowledgeIndex) -> None:
    share = COMMON_NAME_SHARE * len(index.chunks)
    assert _df(index, "cpu") >= share > _df(index, "zorblat") > 0


def test_a_common_name_led_by_a_passage_word_is_let_off(index: KnowledgeIndex) -> None:
    question = "What link joins a Frobton chip to its host CPU?"
    assert _fault(index, question) is None


def test_a_common_name_standing_alone_still_refuses(index: KnowledgeIndex) -> None:
    fault = _fault(index, "Does a Frobton chip leak CPU cycles over its link?")
    assert fault is not None and "cpu" in fault


def test_a_common_name_led_by_a_word_no_passage_writes_still_refuses(index: KnowledgeIndex) -> None:
    fault = _fault(index, "What link joins a Frobton chip to its spare CPU?")
    assert fault is not None and "cpu" in fault


def test_a_rare_name_led_by_a_passage_word_still_refuses(index: KnowledgeIndex) -> None:
    fault = _fault(index, "What link joins a Frobton chip to its host Zorblat?")
    assert fault is not None and "zorblat" in fault


def test_a_higher_share_makes_the_name_rare_again(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answer_gate, "COMMON_NAME_SHARE", 1.01)
    assert _fault(index, "What link joins a Frobton chip to its host CPU?") is not None
