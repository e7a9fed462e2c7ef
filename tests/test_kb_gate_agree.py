"""The gate's support share is relaxed only when the wording and the meaning agree on the quote: the quoted
line comes from the passage closest in meaning, and that passage is close (`AGREE_COSINE`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_helpers import lexical_index
from tests.test_kb_runner_up import SHEET
from tpu_runtime.knowledge.answer import compose
from tpu_runtime.knowledge.answer_gate import AGREE_COSINE, AGREE_MIN_SUPPORT, CLOSE_MIN_SUPPORT
from tpu_runtime.knowledge.models import Answer
from tpu_runtime.knowledge.quote_choice import SUPPORT_PASSAGES
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult

# 'initial' and 'boot' are in no line: the warm-up line holds a share of the question's weighted terms
# between AGREE_MIN_SUPPORT and CLOSE_MIN_SUPPORT
QUESTION = "Does the server compile every bucket on its initial boot?"


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(Path(tmp_path_factory.mktemp("agree")), {"serving.md": SHEET})


def _answer(index: KnowledgeIndex, cosines: list[float]) -> Answer:
    """The question composed with the lexical ranking and these cosines given to its passages in order."""
    found = index.search(QUESTION, SUPPORT_PASSAGES)
    rest = min(cosines) - 0.2
    passages = [
        p.model_copy(update={"cosine": cosines[i] if i < len(cosines) else rest})
        for i, p in enumerate(found.passages)
    ]
    return compose(QUESTION, index, SearchResult(passages, "hybrid"))


def test_the_quote_from_the_closest_close_passage_needs_the_lower_share(serving: KnowledgeIndex) -> None:
    assert AGREE_MIN_SUPPORT < CLOSE_MIN_SUPPORT
    reply = _answer(serving, [AGREE_COSINE + 0.05, 0.5])
    assert reply.covered, reply.reason
    assert "compiles every bucket" in reply.citations[0].quote


def test_without_agreement_the_usual_share_refuses_it(serving: KnowledgeIndex) -> None:
    # another passage is closer in meaning than the quoted one
    other_closer = _answer(serving, [AGREE_COSINE, AGREE_COSINE + 0.05])
    assert not other_closer.covered and f"< {CLOSE_MIN_SUPPORT}" in other_closer.reason
    # the quoted passage is the closest, but not close enough
    not_close = _answer(serving, [AGREE_COSINE - 0.05, 0.5])
    assert not not_close.covered and f"< {CLOSE_MIN_SUPPORT}" in not_close.reason
