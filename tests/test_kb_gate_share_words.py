# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A percentage the question writes is named by the word a line gives that share in (`answer_gate.share_words`):
'only reaches 50% of the link bandwidth' is met by a line saying a one-way ring 'uses half of the link
bandwidth', both in the support share and in the quote's specific-term check. A share with no word of its own
('30%'), a figure that is no percentage ('50 links') and a word that only starts like one ('halfway') are left as
they were. Likewise a number type asked by width and kind ('8-bit float') is named by its short name ('FP8',
`answer_gate.width_names`), in ranking too, so the FP8 line outranks a float32 one; an integer width is not.
Hand-made sheets on a tiny lexical index (the last one writes the figures, so they are known)."""

from __future__ import annotations

import importlib

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import answer_gate, quote_choice
from tpu_runtime.knowledge.answer_gate import _share, named_otherwise, share_words, width_names
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# the module, not the `answer` function the package exports under the same name
answer = importlib.import_module("tpu_runtime.knowledge.answer")

SHEET = """\
# Tiny Zorble rings

## Zorble link bandwidth

- A Zorble ring that sends blocks one way only uses half of the link bandwidth; the two-way Zorble ring splits each block and sends one part each way. ([source](https://example.org/ring), checked 2026-12-07)
- The Zorble link carries 40 GB/s each way. ([source](https://example.org/link), checked 2026-12-07)
"""
OTHER_SHEET = """\
# Tiny Frob limits

## Counts

- Frob cards ship in boxes of 50 or 30. ([source](https://example.org/box), checked 2026-12-07)
- Glorp jobs retry 50 times before they give up. ([source](https://example.org/retry), checked 2026-12-07)
- Blip caches hold 50 entries each. ([source](https://example.org/cache), checked 2026-12-07)
- Snarf ids are 8-bit counters. ([source](https://example.org/ids), checked 2026-12-07)
- Snarf logs keep the newest 50 files. ([source](https://example.org/logs), checked 2026-12-07)
"""
HALF_QUESTION = "My Zorble ring only reaches 50% of the link bandwidth; why?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("share-words"), {"zorble.md": SHEET, "frob.md": OTHER_SHEET})


def test_a_percentage_is_named_by_its_word() -> None:
    assert share_words("only 50% of it")["50"].search("uses half of the bandwidth")
    assert share_words("only 50 percent of it")["50"].search("it is halved")
    assert share_words("takes 200% of the memory")["200"].search("twice the memory")
    assert not share_words("only 50% of it")["50"].search("halfway through")
    # shares with no word of their own, or a figure that is no percentage, are not read
    assert share_words("only 30% of it") == {}
    assert share_words("150% of it, 0.50% of that, 50 chips") == {}
    # read by the support share as well
    assert "50" in named_otherwise(HALF_QUESTION)


def _half_line(index: KnowledgeIndex, question: str, figure: str = "50") -> list[str]:
    """The quote check's reasons for the line giving the ring's share, as the gate reads `question`."""
    prepared = answer.prepared(question, index)
    reading = answer.read_gate(prepared, index, index.search(prepared, 10))
    span = next(s for s in reading.ranked if "half of the link" in s.text)
    return answer_gate.quote_faults(index, prepared, span, [figure], list(reading.weights), reading.names)


def test_the_share_and_the_quote_check_read_the_word(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = {"50": 1.0, "ring": 1.0}
    line = "A one-way ring uses half of the bandwidth."
    assert _share(weights, line, named_otherwise(HALF_QUESTION)) == pytest.approx(1.0)
    assert _half_line(index, HALF_QUESTION) == []
    monkeypatch.setattr(answer_gate, "share_words", lambda question: {})
    assert _share(weights, line, named_otherwise(HALF_QUESTION)) == pytest.approx(0.5)
    # the story's figure is also one the user reports (`reported_figures`), which frees it on its own
    assert _half_line(index, HALF_QUESTION) == []
    monkeypatch.setattr(answer_gate, "reported_figures", lambda question: set())
    assert "no passage line names 50" in _half_line(index, HALF_QUESTION)


def test_a_nearby_question_is_left_as_it_was(index: KnowledgeIndex) -> None:
    # a share no line writes in words, and a figure that is no percentage, still lack their term (asked,
    # so not a figure the user reports in a story)
    assert "no passage line names 30" in _half_line(
        index, "Why does my Zorble ring only reach 30% of the link bandwidth?", "30"
    )
    assert "no passage line names 50" in _half_line(index, "My Zorble ring has 50 links; what bandwidth?")


WIDTH_SHEET = """\
# Tiny Glimmer chips

## Glimmer peak compute

- Glimmer chip peak compute in float32 is 300 TFLOPS, derived from its bf16 peak. ([source](https://example.org/f32), checked 2026-12-07)
- The Glimmer chip accelerates FP8 in hardware, with a peak of 900 TFLOPS. ([source](https://example.org/fp8), checked 2026-12-07)
"""
WIDTH_QUESTION = "peak 8-bit float TFLOPS of a Glimmer chip"


@pytest.fixture(scope="module")
def width_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("width-names"), {"glimmer.md": WIDTH_SHEET, "frob.md": OTHER_SHEET}
    )


def test_a_number_type_is_named_by_its_short_name() -> None:
    named = width_names("peak 8-bit float TFLOPS")
    assert named["8-bit"].search("accelerates FP8") and named["bit"].search("float8 inputs")
    assert not named["8-bit"].search("int8 weights") and not named["8-bit"].search("FP80")
    assert width_names("4-bit integer weights")["4-bit"].search("int4 weights")
    assert width_names("a 64-bit key") == {}  # a width of no number type is left alone


def test_the_short_name_is_quoted_and_lacking_without_the_reading(
    width_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(width_index, WIDTH_QUESTION, "900 TFLOPS")
    monkeypatch.setattr(answer_gate, "width_names", lambda question: {})
    monkeypatch.setattr(quote_choice, "width_names", lambda question: {})
    reply = ask(width_index, WIDTH_QUESTION)
    assert not reply.covered or "900" not in reply.citations[0].quote, reply.reason


def test_an_integer_width_is_not_named_by_a_float_type(width_index: KnowledgeIndex) -> None:
    reply = ask(width_index, "peak 8-bit integer TOPS of a Glimmer chip")
    assert not reply.covered or "900" not in reply.citations[0].quote, reply.reason
