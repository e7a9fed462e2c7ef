# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The gate's rare-name check: a name few passages use ('Llama', 'Slurm') says what a question is
about, so a line from a passage that never names it answers a neighbouring question ('the Qwen3
recipe' for 'the Llama 3 recipe') and is refused, however many of the other words it shares; once a
passage about the named thing exists, the question is answered from it. Hand-made sheets on a tiny
lexical index; the share of passages that makes a name rare is raised to fit a corpus this small."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate
from tpu_runtime.knowledge.answer_gate import rare_names
from tpu_runtime.knowledge.question_reading import name_terms
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# Lines that share the questions' words, each about a neighbour of what is asked; 'Llama', 'Slurm' and
# 'Kimi' are known to the corpus (one passage each), but not from the passages that share the words.
SHEET = """\
# Tiny Servlet sheet

## Servlet sampling recipes

- The Servlet Qwen3 recipe recommends temperature 0.7 with top_p 0.95 for chat. ([source](https://example.org/qwen), checked 2026-12-04)

## Servlet routing

- Servlet routes LLM requests across a Kubernetes fleet of TPU VMs with its router. ([source](https://example.org/route), checked 2026-12-04)

## Servlet kernels

- The Servlet Gated Delta attention kernel runs 1.4x faster on TPU v6e than on TPU v5e. ([source](https://example.org/gdn), checked 2026-12-04)

## Servlet roadmap

- Servlet plans ports of Llama models, a Slurm launcher and Kimi models. ([source](https://example.org/plans), checked 2026-12-04)
"""
ANSWERS = """\
# Servlet named things

## Servlet Llama recipe

- The Servlet Llama 3 recipe recommends temperature 0.6 with top_p 0.9 for chat. ([source](https://example.org/llama), checked 2026-12-04)

## Servlet on Slurm

- On a Slurm cluster, Servlet routes LLM requests across the TPU VMs with its router started by srun. ([source](https://example.org/slurm), checked 2026-12-04)
"""
CASES = [
    # (question, what the answering line quotes)
    ("What temperature and top_p does the Servlet Llama 3 recipe recommend?", "Llama 3 recipe"),
    ("How do I route LLM requests across a Slurm cluster of TPU VMs with Servlet?", "Slurm cluster"),
]
# refused from the neighbouring line; no source answers it even with the named lines added
KIMI = "How fast is the Servlet Kimi Delta attention kernel on TPU v6e compared with TPU v5e?"


@pytest.fixture(autouse=True)
def small_corpus_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name in one of a dozen passages is rare here; the shipped share (1%) fits a corpus of thousands."""
    monkeypatch.setattr(answer_gate, "RARE_NAME_SHARE", 0.2)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("names-bare"), {"servlet.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("names-full"), {"servlet.md": SHEET, "named.md": ANSWERS})


def test_rare_names_are_few_passages_capitalised_non_acronym_words(bare: KnowledgeIndex) -> None:
    question = "How do I route LLM requests across a Slurm cluster of TPU VMs with Servlet?"
    names = name_terms(question)
    assert {"slurm", "servlet", "llm", "tpu"} <= set(names)
    rare = rare_names(bare, question, names)
    # 'Slurm' is in one passage; 'Servlet' is in all of them; 'LLM', 'TPU' and 'VMs' are acronyms
    assert rare == ["slurm"]
    # a name no source uses is the unknown-name check's, not this one's
    assert rare_names(bare, "Which Servlet recipe suits Zephyrine?", ["servlet", "zephyrine"]) == []
    # a capitalised word inside a quoted log line is no name
    assert rare_names(bare, 'Servlet logs "Slurm down"; why?', ["slurm"]) == []


@pytest.mark.parametrize(("question", "expected"), CASES)
def test_a_line_from_a_passage_not_naming_the_rare_name_is_refused(
    bare: KnowledgeIndex, question: str, expected: str
) -> None:
    reply = ask(bare, question)
    assert not reply.covered and reply.citations == [], reply.answer
    # refused for the name, not for lacking the question's other words
    assert "which few sources name" in reply.reason and "best passage supports" not in reply.reason, (
        reply.reason
    )


def test_a_made_up_variant_of_a_kernel_is_refused(full: KnowledgeIndex) -> None:
    reply = ask(full, KIMI)
    assert not reply.covered and "kimi" in reply.reason, reply.reason
    # without the name, the same words are answered from the line about the Gated Delta kernel
    plain = ask(full, KIMI.replace("Kimi ", "Gated "))
    assert plain.covered and "1.4x" in plain.citations[0].quote, plain.reason


@pytest.mark.parametrize(("question", "expected"), CASES)
def test_a_line_from_a_passage_naming_it_answers(full: KnowledgeIndex, question: str, expected: str) -> None:
    assert_quoted(full, question, expected)


def test_a_rare_name_the_quoted_passage_gives_is_no_fault(bare: KnowledgeIndex) -> None:
    # 'Kubernetes' is as rare as 'Slurm' here, and the passage sharing the other words names it
    assert_quoted(
        bare, "How does Servlet route LLM requests across a Kubernetes fleet of TPU VMs?", "Kubernetes fleet"
    )
