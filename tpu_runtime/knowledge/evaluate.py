"""Score the knowledge base against a labelled question set (`tests/data/kb_eval.yaml`).

Metrics: recall@5 and MRR over covered questions (does a passage from an expected source rank in the top
5, and how high), plus the precision and recall of the "not covered" verdict over all questions, and
the two failure lists the issue cares about: covered questions refused, uncovered questions answered.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict

from tpu_runtime.knowledge.answer import compose
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

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


class EvalCase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    q: str
    covered: bool = True
    kind: str = "concept"
    expect: list[Expect] = []


class CaseResult(BaseModel):
    q: str
    kind: str
    covered: bool
    predicted_covered: bool
    rank: int | None
    reason: str
    top: list[str]
    ms: float


class EvalReport(BaseModel):
    cases: int
    covered_cases: int
    uncovered_cases: int
    recall_at_5: float
    mrr: float
    not_covered_precision: float
    not_covered_recall: float
    covered_refused: list[str]
    uncovered_answered: list[str]
    missed: list[str]
    mode: str
    mean_ms: float
    results: list[CaseResult]


def load_cases(path: Path) -> list[EvalCase]:
    raw = yaml.safe_load(path.read_text())
    cases = [EvalCase.model_validate(item) for item in raw["cases"]]
    for case in cases:
        if case.covered and not case.expect:
            raise ValueError(f"covered case without an expected source: {case.q!r}")
    return cases


def _rank(case: EvalCase, passages: list[Passage]) -> int | None:
    for rank, passage in enumerate(passages, 1):
        if any(e.matches(passage) for e in case.expect):
            return rank
    return None


def score(index: KnowledgeIndex, cases: list[EvalCase]) -> EvalReport:
    results: list[CaseResult] = []
    modes: set[str] = set()
    for case in cases:
        started = time.perf_counter()
        found = index.search(case.q, MRR_DEPTH)
        reply = compose(case.q, index, found)
        modes.add(found.mode)
        elapsed = (time.perf_counter() - started) * 1000
        results.append(
            CaseResult(
                q=case.q,
                kind=case.kind,
                covered=case.covered,
                predicted_covered=reply.covered,
                rank=_rank(case, found.passages) if case.covered else None,
                reason=reply.reason,
                top=[p.source for p in found.passages[:3]],
                ms=round(elapsed, 2),
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
        mrr=round(sum(1.0 / r.rank for r in covered if r.rank) / max(len(covered), 1), 4),
        not_covered_precision=round(sum(1 for r in said_not if not r.covered) / len(said_not), 4)
        if said_not
        else 1.0,
        not_covered_recall=round(
            sum(1 for r in uncovered if not r.predicted_covered) / max(len(uncovered), 1), 4
        ),
        covered_refused=[r.q for r in covered if not r.predicted_covered],
        uncovered_answered=[r.q for r in uncovered if r.predicted_covered],
        missed=[r.q for r in covered if r.rank is None or r.rank > RECALL_AT],
        mode="+".join(sorted(modes)),
        mean_ms=round(sum(r.ms for r in results) / max(len(results), 1), 2),
        results=results,
    )
