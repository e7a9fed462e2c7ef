"""Word forms and families: a paraphrased question word meets the docs' word, a look-alike does not."""

from __future__ import annotations

import pytest

from tpu_runtime.knowledge.answer import _present, _terms
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
    ],
)
def test_a_family_member_names_its_kin_in_a_line(asked: str, written: str) -> None:
    assert family(asked) is not None and family(asked) == family(written)
    assert _present(_terms(f"A line that {written} something."), asked)


@pytest.mark.parametrize(
    ("asked", "written"),
    [("compiler", "compile"), ("portable", "document"), ("communication", "talk"), ("price", "cost")],
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
