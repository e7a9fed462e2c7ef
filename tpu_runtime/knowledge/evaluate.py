"""Score the knowledge base against a labelled question set (`tests/data/kb_eval.yaml`).

Metrics: recall@5 and MRR over covered questions (does a passage from an expected source rank in the top
5, and how high); "answered": the share of covered questions answered with a citation whose quote
contains every key term of the expected answer (any of its citations: close runner-up lines are quoted
too; "answered_first" counts the first alone); "refused": the share of uncovered questions refused;
the precision and recall of the "not covered" verdict; the failure lists behind them; and, for each
covered question missed, where its answer was (`Reach`): in a passage retrieved for it (the gate or the
quote choice lost it), elsewhere in the index (retrieval lost it) or nowhere (the sheets lack it).

The set is split in two halves by a hash of each case's stable id (`half()`): thresholds and retrieval
are tuned on "dev" only, and "held-back" is only reported, so its figures are not fitted to it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

from tpu_runtime.knowledge.answer import SUPPORT_PASSAGES, compose
from tpu_runtime.knowledge.models import Answer, Passage
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult
from tpu_runtime.yaml_data import safe_load

RECALL_AT = 5
MRR_DEPTH = 10


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    section: str | None = None
    symbol: str | None = None

    def matches(self, passage: Passage) -> bool:
        if self.path.lower() not in passage.path.lower():
            return False
        if self.section and self.section.lower() not in (passage.section or "").lower():
            return False
        return not (self.symbol and self.symbol.lower() not in (passage.symbol or "").lower())


Half = Literal["dev", "held-back"]


def half(case_id: str) -> Half:
    """The case's half: sha256 of its id, first byte even -> dev, odd -> held-back (fixed, not tuned)."""
    return "dev" if hashlib.sha256(case_id.encode()).digest()[0] % 2 == 0 else "held-back"


Fold = Literal["A", "B"]


def fold(case_id: str) -> Fold:
    """The case's fold within its half: second byte of the id's sha256 even -> "A", odd -> "B". Answer
    changes are chosen by looking at fold A's failures and kept only when fold B does not drop, so that
    the dev figure itself is not fitted to the cases read."""
    return "A" if hashlib.sha256(case_id.encode()).digest()[1] % 2 == 0 else "B"


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    q: str
    covered: bool = True
    kind: str = "concept"
    answer: list[str] = []  # key terms the cited quote must contain; "a|b" accepts either (covered cases)
    url: str | None = None  # the official page that answers it (covered cases)
    expect: list[Expect] = []

    @property
    def half(self) -> Half:
        return half(self.id)

    @property
    def fold(self) -> Fold:
        return fold(self.id)

    def answered_by(self, reply: Answer) -> bool:
        """Covered, judged covered, and a cited quote holds every key term."""
        return self.covered and reply.covered and any(self.quote_answers(c.quote) for c in reply.citations)

    def refused_by(self, reply: Answer) -> bool:
        """Not covered, and judged not covered."""
        return not self.covered and not reply.covered

    def quote_answers(self, quote: str) -> bool:
        """Whether a cited quote contains every key term (case-insensitive, whitespace-normalised)."""
        flat = " ".join(quote.lower().split())
        return bool(self.answer) and all(
            any(" ".join(alt.lower().split()) in flat for alt in term.split("|")) for term in self.answer
        )


Reach = Literal["retrieved", "indexed", "absent"]


def answer_reach(case: EvalCase, index: KnowledgeIndex, passages: list[Passage]) -> Reach:
    """Where a missed answer's key terms stand together: tells a gate or quote fault from a missing fact."""
    if any(case.quote_answers(p.text) for p in passages):
        return "retrieved"
    if any(case.quote_answers(chunk.text) for chunk in index.chunks):
        return "indexed"
    return "absent"


class CaseResult(BaseModel):
    id: str
    q: str
    kind: str
    half: Half
    covered: bool
    predicted_covered: bool
    answered: bool  # covered, and a cited quote contains the answer's key terms
    answered_first: bool  # covered, and the first cited quote alone contains them
    citations: int  # quotes cited (close runner-up lines are quoted too)
    quote: str | None
    rank: int | None
    reason: str
    top: list[str]
    ms: float
    reach: Reach | None = None  # covered and missed: where the answer was


class EvalReport(BaseModel):
    cases: int
    covered_cases: int
    uncovered_cases: int
    recall_at_5: float
    mrr: float
    answered: float  # covered questions answered with a quote containing the answer
    answered_first: float  # the same counting the first quote alone
    citations_per_answer: float  # mean quotes per covered verdict
    refused: float  # uncovered questions refused
    not_covered_precision: float
    not_covered_recall: float
    covered_refused: list[str]
    uncovered_answered: list[str]
    wrong_quote: list[str]  # covered, answered, but the quote lacks the answer's key terms
    missed: list[str]
    reach: dict[str, int]  # covered misses by where their answer was (`answer_reach`)
    mode: str
    mean_ms: float
    results: list[CaseResult]


def load_cases(path: Path) -> list[EvalCase]:
    raw = safe_load(path.read_text())
    cases = [EvalCase.model_validate(item) for item in raw["cases"]]
    for case in cases:
        if case.covered and not (case.expect and case.answer and case.url):
            raise ValueError(f"covered case needs expect, answer and url: {case.id}")
    if len({c.id for c in cases}) != len(cases):
        raise ValueError("case ids must be unique")
    return cases


def _rank(case: EvalCase, passages: list[Passage]) -> int | None:
    for rank, passage in enumerate(passages, 1):
        if any(e.matches(passage) for e in case.expect):
            return rank
    return None


def search_depth() -> int:
    """As deep as the ask workflow's retrieve step goes, so the answer weighs the same passages."""
    return max(MRR_DEPTH, SUPPORT_PASSAGES)


def score(
    index: KnowledgeIndex, cases: list[EvalCase], searches: Mapping[str, SearchResult] | None = None
) -> EvalReport:
    """The report on `cases`; `searches` (case id: its search at `search_depth()`) reuses searches already
    made, so a benchmark that re-judges the same passages many times searches once."""
    results: list[CaseResult] = []
    modes: set[str] = set()
    for case in cases:
        started = time.perf_counter()
        found = (
            searches[case.id] if searches and case.id in searches else index.search(case.q, search_depth())
        )
        reply = compose(case.q, index, found)
        modes.add(found.mode)
        elapsed = (time.perf_counter() - started) * 1000
        quote = reply.citations[0].quote if reply.citations else None
        answered = case.answered_by(reply)
        results.append(
            CaseResult(
                id=case.id,
                q=case.q,
                kind=case.kind,
                half=case.half,
                covered=case.covered,
                predicted_covered=reply.covered,
                answered=answered,
                answered_first=case.covered
                and reply.covered
                and quote is not None
                and case.quote_answers(quote),
                citations=len(reply.citations),
                quote=quote,
                rank=_rank(case, found.passages) if case.covered else None,
                reason=reply.reason,
                top=[p.source for p in found.passages[:3]],
                ms=round(elapsed, 2),
                reach=answer_reach(case, index, found.passages) if case.covered and not answered else None,
            )
        )
    covered = [r for r in results if r.covered]
    uncovered = [r for r in results if not r.covered]
    said_not = [r for r in results if not r.predicted_covered]
    hits = [r for r in covered if r.rank is not None and r.rank <= RECALL_AT]
    return EvalReport(
        cases=len(results),
        covered_cases=len(covered),
        uncovered_cases=len(uncovered),
        recall_at_5=round(len(hits) / max(len(covered), 1), 4),
        answered=round(sum(1 for r in covered if r.answered) / max(len(covered), 1), 4),
        answered_first=round(sum(1 for r in covered if r.answered_first) / max(len(covered), 1), 4),
        citations_per_answer=round(
            sum(r.citations for r in results if r.predicted_covered)
            / max(sum(1 for r in results if r.predicted_covered), 1),
            2,
        ),
        refused=round(sum(1 for r in uncovered if not r.predicted_covered) / max(len(uncovered), 1), 4),
        mrr=round(sum(1.0 / r.rank for r in covered if r.rank) / max(len(covered), 1), 4),
        not_covered_precision=round(sum(1 for r in said_not if not r.covered) / len(said_not), 4)
        if said_not
        else 1.0,
        not_covered_recall=round(
            sum(1 for r in uncovered if not r.predicted_covered) / max(len(uncovered), 1), 4
        ),
        covered_refused=[r.q for r in covered if not r.predicted_covered],
        uncovered_answered=[r.q for r in uncovered if r.predicted_covered],
        wrong_quote=[r.q for r in covered if r.predicted_covered and not r.answered],
        missed=[r.q for r in covered if r.rank is None or r.rank > RECALL_AT],
        reach={kind: sum(1 for r in covered if r.reach == kind) for kind in get_args(Reach)},
        mode="+".join(sorted(modes)),
        mean_ms=round(sum(r.ms for r in results) / max(len(results), 1), 2),
        results=results,
    )
