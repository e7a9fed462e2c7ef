"""The steps of workflows/ask.yaml: each reads and writes one `AskContext`, in order.

`index` opens (first building) the knowledge index, `retrieve` ranks passages for the question, `answer`
quotes the supporting span or says "not covered". Each step records its own wall time in milliseconds
under the name `Answer.timings_ms` has always used (open, search, answer).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import Step, produced

if TYPE_CHECKING:
    from tpu_runtime.knowledge.models import Answer
    from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult


@dataclass
class AskContext:
    """What the steps of workflows/ask.yaml read and write."""

    question: str  # already checked (`api.check_query`)
    k: int = 5
    folder: Path | None = None
    index: KnowledgeIndex | None = None
    result: SearchResult | None = None
    answer: Answer | None = None
    timings_ms: dict[str, float] = field(default_factory=dict)

    def require_answer(self) -> Answer:
        return produced(self.answer, "the answer step")


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 2)


def open_index(ctx: AskContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.knowledge.opened import open_index as open_cached

    started = time.perf_counter()
    ctx.index = open_cached(ctx.folder, progress=progress)
    ctx.timings_ms["open"] = _ms(started)


def retrieve(ctx: AskContext, step: Step, progress: ProgressFn) -> None:
    index = produced(ctx.index, "the index step")
    from tpu_runtime.knowledge.answer import SUPPORT_PASSAGES

    started = time.perf_counter()
    # the answer weighs more passages than the caller lists: its line may come from below the top k
    ctx.result = index.search(ctx.question, max(ctx.k, SUPPORT_PASSAGES))
    ctx.timings_ms["search"] = _ms(started)


def answer(ctx: AskContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.knowledge.answer import compose, listed_passages

    index, result = produced(ctx.index, "the retrieve step"), produced(ctx.result, "the retrieve step")
    started = time.perf_counter()
    ctx.answer = compose(ctx.question, index, result)
    ctx.answer.passages = listed_passages(ctx.answer, ctx.k)
    ctx.timings_ms["answer"] = _ms(started)
