"""Span selection and the "not covered" gate, on hand-made passages."""

from __future__ import annotations

from tpu_runtime.knowledge.answer import _url_near, candidate_spans, closest_page, stem
from tpu_runtime.knowledge.models import Passage


def _passage(text: str, url: str | None = None, kind: str = "curated") -> Passage:
    return Passage(
        text=text,
        source="x.md:1",
        url=url,
        score=1.0,
        kind=kind,
        path="x.md",
        line=1,
        chunk_id="c1",  # type: ignore[arg-type]
    )


def test_spans_are_exact_substrings_without_list_markers_or_source_tails() -> None:
    text = (
        "- First fact about HBM. ([source](https://a.example/hbm), checked 2026-11-30)\n"
        "- Second fact: VMEM is small and fast. Another sentence here follows it.\n\n"
        "A wrapped paragraph that goes on\nacross two lines of text."
    )
    spans = candidate_spans(text)
    assert "First fact about HBM." in spans
    assert "Second fact: VMEM is small and fast." in spans
    assert "Another sentence here follows it." in spans
    assert "A wrapped paragraph that goes on\nacross two lines of text." in spans
    assert all(span in text for span in spans)
    assert not any("source" in span or span.startswith("- ") for span in spans)


def test_url_nearest_after_the_quote_is_cited() -> None:
    passage = _passage(
        "- Alpha value is 1. ([source](https://a.example/1), checked 2026-11-30)\n"
        "- Beta value is 2. ([source](https://b.example/2), checked 2026-11-30)",
        url="https://a.example/1",
    )
    assert _url_near(passage, "Beta value is 2.") == "https://b.example/2"
    assert _url_near(passage, "Alpha value is 1.") == "https://a.example/1"


def test_closest_page_prefers_a_passage_url_then_a_fallback() -> None:
    assert closest_page([_passage("t", None), _passage("u", "https://b.example/")]) == "https://b.example/"
    assert closest_page([_passage("t", None, kind="package")]).startswith("https://docs.jax.dev/")
    assert closest_page([]).startswith("https://")


def test_stemming_meets_plural_and_verb_forms() -> None:
    assert stem("topologies") == stem("topology")
    assert stem("offers") == stem("offer")
    assert stem("v6e") == "v6e" and stem("bf16") == "bf16"
