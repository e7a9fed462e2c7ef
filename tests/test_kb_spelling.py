# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A misspelt plain word of a question ('comand', 'kernal') is read as the English word the sources use one
edit away; English words, names and values the sources lack stay as typed. Hand-made sheets on a tiny
lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import spelling
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.spelling import english_words, one_edit, respelled

SHEET = """\
# Tiny Frobton sheet

## Install

- The command `pip install frobton-tpu` installs Frobton for TPUs; once installed it serves three hosts. ([source](https://example.org/install), checked 2026-12-07)

## Run

- The `frob run` command starts a widget job on three hosts of a kernel pool where Frobton is installed. ([source](https://example.org/run), checked 2026-12-07)

## Logs

- The `frob logs` command prints the last three kernel logs of an installed widget job. ([source](https://example.org/logs), checked 2026-12-07)

## Reset

- After a kernel raises, call `frob.reset_state()` before the next kernel runs; the install keeps its batch queue. ([source](https://example.org/reset), checked 2026-12-07)
"""

QUESTION = "whats the comand to install frobton for tpus"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    if not english_words():
        pytest.skip("the embedding model (its vocabulary) is not installed")
    return lexical_index(tmp_path_factory.mktemp("spelling"), {"frobton.md": SHEET})


def test_misspelt_words_read_as_the_sources_words(index: KnowledgeIndex) -> None:
    assert respelled(index, QUESTION) == "what the command to install frobton for tpus"
    assert respelled(index, "my kernal raised, what now") == "my kernel raised, what now"


def test_a_misspelt_question_is_answered_and_refused_without_respelling(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "pip install frobton-tpu")
    monkeypatch.setattr(spelling, "english_words", frozenset)  # no vocabulary: nothing is respelt
    reply = ask(index, QUESTION)
    assert not reply.covered and "supports" in reply.reason, reply.reason


@pytest.mark.parametrize(
    "question",
    [
        "the kernel threw, what now",  # an English word the sources lack ('threw' is not 'three')
        "submit it with scommand",  # the first letter differs: a name, not a slip
        "What does MODE=comand select",  # a value assigned to a name
        "which installer for frobton",  # a sources' word with an ending ('install' + 'er'), not 'installed'
        "what does `comand` print",  # a code span
        "what does Comand print",  # a capitalised name
        "print the kernal frobb",  # 'frob' is the sources' word one edit away, but no English word
    ],
)
def test_words_that_are_not_slips_stay_as_typed(index: KnowledgeIndex, question: str) -> None:
    expected = question.replace("kernal", "kernel")
    assert respelled(index, question) == expected


def test_a_respelling_must_be_common_in_the_sources(index: KnowledgeIndex) -> None:
    # 'queue' is in one passage only, under `MIN_RESPELLED_DF`; 'three' in three
    assert "queue" in one_edit("qeue")
    assert respelled(index, "the batch qeue of frobton") == "the batch qeue of frobton"
    assert respelled(index, "the last thrree logs") == "the last three logs"
