# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Word forms and families: a paraphrased question word meets the docs' word, a look-alike does not."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.answer_gate import _present, _terms, headed_by
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import FAMILIES, family, family_words, stem


@pytest.mark.parametrize(
    ("word", "form"),
    [("jitted", "jit"), ("padding", "pad"), ("embedded", "embed"), ("running", "runs")],
)
def test_a_doubled_consonant_before_ed_or_ing_is_undone(word: str, form: str) -> None:
    assert stem(word) == stem(form)


def test_doubled_l_and_s_are_the_words_own() -> None:
    assert stem("installed") == "install"
    assert stem("passed") == "pass"


@pytest.mark.parametrize(
    ("word", "form"),
    [("losing", "lose"), ("named", "name"), ("timing", "time"), ("tuned", "tunes"), ("typing", "type")],
)
def test_a_short_verb_keeps_the_silent_e_its_suffix_took(word: str, form: str) -> None:
    assert stem(word) == stem(form)
    assert _present(_terms(f"A Gridlet job may {form} a slice."), word)


@pytest.mark.parametrize("word", ["string", "adding", "fixed", "embed", "speed", "using"])
def test_words_that_only_look_like_a_short_verb_are_left_alone(word: str) -> None:
    # no vowel between consonants ('str'), a double or final 'x' consonant, or a two-letter root
    assert not stem(word).endswith("e") or word.endswith("e")
    assert stem(word) != f"{word[:3]}e"


@pytest.mark.parametrize(
    ("asked", "written"),
    [
        # the stemmer splits these three ('docu', 'documentat', 'doc'); the family joins them
        ("documentation", "docs"),
        ("documented", "doc"),
        ("variables", "var"),
        ("placed", "puts"),
        ("steer", "hints"),
        ("choice", "picks"),
        ("execution", "runs"),
        # GKE and Multislice pages say 'workload' where users say 'job'
        ("jobs", "workloads"),
        # 'memory usage' is the docs' 'memory use'
        ("usage", "uses"),
        # a dtype's long name is its short one, and a compute rate is FLOPS whatever its prefix
        ("bfloat16", "bf16"),
        ("float8", "fp8"),
        ("flops", "exaflops"),
        ("tflops", "teraflops"),
    ],
)
def test_a_family_member_names_its_kin_in_a_line(asked: str, written: str) -> None:
    assert family(asked) is not None and family(asked) == family(written)
    assert _present(_terms(f"A line that {written} something."), asked)


@pytest.mark.parametrize(
    ("asked", "written"),
    [
        ("compiler", "compile"),
        ("portable", "document"),
        ("communication", "talk"),
        ("price", "cost"),
        # other dtypes stay apart: a bf16 line does not answer an fp8 question
        ("fp8", "bf16"),
        ("float16", "bfloat16"),
    ],
)
def test_words_outside_a_family_stay_apart(asked: str, written: str) -> None:
    assert not _present(_terms(f"A line that says {written} once."), asked)


def test_families_are_disjoint_and_their_marks_are_not_tokens() -> None:
    # a stem in two families would join them both, so a word would meet words of another family
    owners: dict[str, set[str]] = {}
    for members in FAMILIES:
        for word in members:
            owners.setdefault(stem(word), set()).add(members[0])
    assert all(len(heads) == 1 for heads in owners.values())
    marks = {family(m[0]) for m in FAMILIES}
    assert len(marks) == len(FAMILIES) and all(m and m.startswith("=") for m in marks)
    assert family_words("documentation") == ("doc", "document", "documentation")
    assert family_words("tpu") == ("tpu",)


def test_an_ization_noun_meets_its_ize_verb() -> None:
    assert stem("rematerialization") == stem("rematerialized")
    assert stem("quantization") == stem("quantize")


# invented lines; the questions below word them otherwise
PARAPHRASE_SHEET = """\
# Tiny paraphrase sheet

## Sharding

- `with_sharding_constraint` hints a sharding to the compiler for an intermediate value. ([source](https://example.org/wsc), checked 2026-12-04)
- The Falcon runtime reads its settings from the docs folder. ([source](https://example.org/docs), checked 2026-12-04)

## Hosts

- A Falcon host has 1536 GiB of DRAM. ([source](https://example.org/host), checked 2026-12-04)

## Compute

- One Falcon chip peaks at 459 TFLOPS in bf16. ([source](https://example.org/chip), checked 2026-12-04)
- A full Falcon Pod reaches 2.2 exaflops of peak compute. ([source](https://example.org/pod), checked 2026-12-04)

## Images

- The boot disk of a Falcon VM holds the runtime image. ([source](https://example.org/boot), checked 2026-12-04)

## Checkpoints

- Falcon checkpoints go to a local ramdisk on every host, sized at 12 bytes per parameter. ([source](https://example.org/ckpt), checked 2026-12-04)
"""


@pytest.fixture(scope="module")
def paraphrased(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("words"), {"paraphrase.md": PARAPHRASE_SHEET})


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # 'steer' is the line's 'hints' (a word no line uses, so it would weigh most and sink the support)
        ("How do I steer the compiler?", "with_sharding_constraint"),
        # 'documentation' stems to 'documentat', the line's 'docs' to 'doc'
        ("Which documentation holds the Falcon settings?", "docs folder"),
        # 'RAM' is the line's 'DRAM'
        ("How much RAM does a Falcon host have?", "1536 GiB"),
        # 'bfloat16' is the line's 'bf16', 'FLOPS' its 'exaflops'
        ("What is the bfloat16 peak of one Falcon chip?", "459 TFLOPS"),
        ("total FLOPS of a Falcon Pod", "2.2 exaflops"),
        # the focus 'disk' of 'how much RAM disk' is the head of the line's one-word 'ramdisk'
        ("Falcon checkpoints: how much RAM disk does each host need?", "12 bytes"),
    ],
)
def test_a_paraphrased_question_is_answered_from_its_line(
    paraphrased: KnowledgeIndex, question: str, expected: str
) -> None:
    reply = ask(paraphrased, question)
    assert reply.covered, reply.reason
    assert expected in reply.citations[0].quote


@pytest.mark.parametrize(
    "question",
    [
        # the same paraphrases about what no line says
        "How do I steer the compiler's sharding of an intermediate value on a Gaudi accelerator?",
        "What refund does the documentation of the Falcon runtime promise?",
        "How much RAM does a Falcon host lose per year to ECC scrubbing?",
        # no line gives an fp8 figure: the bf16 one must not answer it
        "What is the fp8 peak of one Falcon chip?",
    ],
)
def test_a_lexically_close_paraphrase_the_lines_do_not_answer_is_refused(
    paraphrased: KnowledgeIndex, question: str
) -> None:
    assert not ask(paraphrased, question).covered


@pytest.mark.parametrize(
    ("word", "text", "named"),
    [
        ("disk", "a local ramdisk per host", True),
        ("parameters", "every hyperparameter is logged", True),
        # the word itself is no compound of it, too short a lead or head is no compound at all
        ("disk", "a local disk per host", False),
        ("disk", "adisk", False),
        ("map", "a bitmap of the chips", False),
    ],
)
def test_a_one_word_compound_names_its_last_part(word: str, text: str, named: bool) -> None:
    assert headed_by(word, text) is named


def test_a_tpu_generation_is_one_family_under_its_other_names() -> None:
    """Cloud TPU's pages name one generation several ways: a question saying "v7x" meets a TPU7x line."""
    assert family("v7x") == family("tpu7x") == family("ironwood") is not None
    assert family("trillium") == family("v6e") is not None
    assert family("v5litepod") == family("v5e") is not None
    assert len({family("v7x"), family("v6e"), family("v5e")}) == 3
    assert family("v5p") is None  # a generation of its own, kin to none of them
