"""Turn ranked passages into an answer: a quoted supporting span, or "not covered" and a page to read.

The answer is extractive: the sentence (or fact line) of the top passages that best covers the question's
distinctive terms, quoted exactly and checked to occur word for word in the passage it cites. A question
is "covered" only when three gates agree: the best passage is semantically close (top-1 cosine, when
vectors exist), the question's distinctive terms (weighted by rarity in the corpus) occur in the cited
passage, and a quote could be checked. Otherwise the answer says so and names the closest page, never a
guess. Thresholds were set on `tests/data/kb_eval.yaml` (see `benchmarks/kb_eval.py`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from tpu_runtime.knowledge.corpus import urls_in
from tpu_runtime.knowledge.lexical import tokenize
from tpu_runtime.knowledge.models import Answer, Citation, Passage
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult

MIN_COSINE = 0.30  # best cosine below this: nothing in the corpus is about the question
MIN_TERM_COVERAGE = 0.55  # share of the question's rarity-weighted terms found in the top passages
# A semantically close passage (cosine >= CLOSE_COSINE) may leave more of the wording unmatched
# ('allowed', 'take effect'), down to CLOSE_MIN_COVERAGE; off-topic questions stay below both.
CLOSE_COSINE = 0.50
CLOSE_MIN_COVERAGE = 0.40
LEXICAL_MIN_COVERAGE = 0.55  # with no vectors, the terms alone decide
QUOTE_PASSAGES = 3
MAX_QUOTE_CHARS = 400
# Words that ask rather than inform: they never decide whether the corpus covers a question.
QUESTION_WORDS = frozenset(
    "which who whom whose what when where why how much many does do did is are was were can could "  # noqa: SIM905
    "should would will shall may might must there here please tell explain show give list need want "
    "know use using used get set make way best good about any some all each every one two also just "
    "only i me my we our you your it its they them this that these those ".split()
)
FALLBACK_PAGES = {
    "curated": "https://docs.cloud.google.com/tpu/docs",
    "package": "https://docs.jax.dev/en/latest/pallas/index.html",
    "folder": "https://docs.cloud.google.com/tpu/docs",
}
_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*])")
_LEAD_RE = re.compile(r"^\s*(?:[-*+>]\s+|\d+[.)]\s+|\|\s*)*")
_TRAIL_RE = re.compile(r"\s*\((?:\[?source\]?[:(]|see |https?://).*$", re.I)


@dataclass
class Span:
    text: str
    passage: Passage
    overlap: float


def stem(token: str) -> str:
    """A light English stemmer, enough that 'topologies' meets 'topology' and 'offers' meets 'offer'."""
    if len(token) <= 4 or not token.isalpha():
        return token
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)] + repl
    return token


def _parts(token: str) -> list[str]:
    return [p for p in re.split(r"[._\-/:]+", token) if p]


def _weights(index: KnowledgeIndex, question: str) -> dict[str, float]:
    """Rarity weight (idf) of each distinctive question term; terms absent from the corpus weigh most."""
    total = max(len(index.chunks), 1)
    weights: dict[str, float] = {}
    for token in tokenize(question):
        if token in QUESTION_WORDS or len(token) < 2 or token in weights:
            continue
        df = index.document_frequency(token)
        if df == 0 and len(_parts(token)) > 1:
            # an unseen compound ('3.1', 'fine-tuning') counts as known when its parts are known
            df = min((index.document_frequency(p) for p in _parts(token)), default=0)
        weights[token] = math.log((total + 1) / (df + 0.5))
    return weights


def _present(terms: set[str], token: str) -> bool:
    if token in terms or stem(token) in terms:
        return True
    parts = _parts(token)
    return len(parts) > 1 and all(p in terms or stem(p) in terms for p in parts)


def _coverage(weights: dict[str, float], text: str) -> float:
    """Share of the question's weighted terms that occur in `text` (after light stemming)."""
    if not weights:
        return 0.0
    tokens = tokenize(text)
    present = set(tokens) | {stem(t) for t in tokens}
    return sum(w for t, w in weights.items() if _present(present, t)) / sum(weights.values())


def candidate_spans(text: str) -> list[str]:
    """Sentences and fact lines of a passage, each an exact substring of it."""
    spans: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        # a wrapped paragraph reads as one sentence stream; bullets, tables and code are line-based
        if len(lines) > 1 and not any(_LEAD_RE.match(line).group(0) for line in lines[1:]):  # type: ignore[union-attr]
            units = [block]
        else:
            units = lines
        for unit in units:
            for sentence in _SPLIT_RE.split(unit):
                lead = _LEAD_RE.match(sentence)
                cleaned = sentence[lead.end() if lead else 0 :]
                cleaned = _TRAIL_RE.sub("", cleaned).strip().rstrip(",;")
                if len(cleaned) >= 12 and cleaned in text:
                    spans.append(cleaned[:MAX_QUOTE_CHARS] if cleaned[:MAX_QUOTE_CHARS] in text else cleaned)
    return spans


def best_span(weights: dict[str, float], passages: list[Passage]) -> Span | None:
    best: Span | None = None
    for rank, passage in enumerate(passages[:QUOTE_PASSAGES]):
        for span in candidate_spans(passage.text):
            overlap = _coverage(weights, span) / (1.0 + 0.15 * rank)
            if best is None or overlap > best.overlap:
                best = Span(span, passage, overlap)
    return best


def _url_near(passage: Passage, quote: str) -> str | None:
    """The source URL written closest after the quote in the passage (fact sheets cite per line)."""
    start = passage.text.find(quote)
    after = [url for offset, url in urls_in(passage.text) if offset >= start]
    return after[0] if after else passage.url


def closest_page(passages: list[Passage]) -> str:
    for passage in passages:
        if passage.url:
            return passage.url
    kind = passages[0].kind if passages else "curated"
    return FALLBACK_PAGES[kind]


def compose(question: str, index: KnowledgeIndex, result: SearchResult) -> Answer:
    """Judge coverage from the ranked passages and, when covered, quote and cite the best span."""
    passages = result.passages
    weights = _weights(index, question)
    base: dict[str, Any] = {
        "question": question,
        "passages": passages,
        "mode": result.mode,
        "notes": result.notes,
    }
    if not passages:
        page = FALLBACK_PAGES["curated"]
        return Answer(
            covered=False,
            answer=f"Not covered: no indexed passage matches this question. Closest page to read: {page}",
            closest=page,
            reason="no passage retrieved",
            **base,
        )
    cos_best = max((p.cosine for p in passages if p.cosine is not None), default=None)
    span = best_span(weights, passages)
    context = "\n".join(f"{p.source}\n{p.text}" for p in passages[:QUOTE_PASSAGES])
    passage_cov = _coverage(weights, context)
    if result.mode != "hybrid":
        need = LEXICAL_MIN_COVERAGE
    elif cos_best is not None and cos_best >= CLOSE_COSINE:
        need = CLOSE_MIN_COVERAGE
    else:
        need = MIN_TERM_COVERAGE
    reasons = []
    if cos_best is not None and cos_best < MIN_COSINE:
        reasons.append(f"best cosine {cos_best:.2f} < {MIN_COSINE}")
    if passage_cov < need:
        seen = set(tokenize(context))
        missing = [t for t in weights if not _present(seen | {stem(t) for t in seen}, t)]
        reasons.append(
            f"question terms covered {passage_cov:.2f} < {need} (absent: {', '.join(missing[:5])})"
        )
    if span is None or span.text not in span.passage.text:
        reasons.append("no quotable span")
    signal = f"best cosine {cos_best:.2f}, " if cos_best is not None else ""
    if reasons:
        page = closest_page(passages)
        return Answer(
            covered=False,
            answer=f"Not covered by the indexed sources. Closest page to read: {page}",
            closest=page,
            reason="; ".join(reasons),
            **base,
        )
    assert span is not None
    citation = Citation(
        source=span.passage.source,
        url=_url_near(span.passage, span.text),
        quote=span.text,
        chunk_id=span.passage.chunk_id,
        checked=span.passage.checked,
    )
    return Answer(
        covered=True,
        answer=f"{span.text} [{span.passage.source}]",
        citations=[citation],
        reason=f"{signal}question terms covered {passage_cov:.2f}, quote checked in {span.passage.source}",
        **base,
    )
