# ruff: noqa: E501  (fact-sheet lines are long by design)
"""`benchmarks/fit_answer_gate.py` measures the gate as `answer.compose` judges: its reasons must give
compose's verdict (the script's hand-gate figures stand for kb_eval's), its rescue gate may answer a question
the hand gate refuses for a share just short of the need but never refuse one it answers, and its logistic
fit orders questions by the feature that separates them. Hand-made sheet on a tiny lexical index."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from tests.conftest import REPO
from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.quote_choice import SUPPORT_PASSAGES
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

# The script imports `bench_env` beside it; the folder leaves sys.path again at once, since its module names
# (`kernels`, `mcp`) would shadow installed packages of the same names for every later test.
sys.path.insert(0, str(REPO / "benchmarks"))
try:
    import fit_answer_gate as gate
finally:
    sys.path.remove(str(REPO / "benchmarks"))

SHEET = """\
# Tiny Quillon chips

## Memory

- A Quillon Q7 chip carries 48 GiB of high-bandwidth memory in four stacks. ([source](https://example.org/q7), checked 2026-12-07)
- The Quillon compiler caches compiled programs in `QUILL_CACHE_DIR` when it is set. ([source](https://example.org/cache), checked 2026-12-07)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("gate-measures"), {"quillon.md": SHEET})


@pytest.mark.parametrize(
    ("question", "covered"),
    [
        ("How much high-bandwidth memory does a Quillon Q7 chip carry?", True),
        ("Which environment variable sets where the Quillon compiler caches compiled programs?", True),
        ("What refund does Quillon give for a failed Q7 chip under its warranty terms?", False),
    ],
)
def test_measures_give_composes_verdict(index: KnowledgeIndex, question: str, covered: bool) -> None:
    found = index.search(question, SUPPORT_PASSAGES)
    row = gate.measures(question, index, found)
    assert ask(index, question).covered is covered
    assert gate.hand(row) is covered, row["failed"]
    assert len(gate.feature_vector(row)) == len(gate.FEATURES)
    if covered:
        assert row["quotes"] and row["fused_rank"] >= 1


def _row(share: float, need: float, **failed: bool) -> dict[str, Any]:
    checks = dict.fromkeys(gate.CHECKS, False) | failed
    checks["support"] = share < need
    return {"support": share, "need": need, "failed": checks}


def test_rescue_answers_a_share_just_short_and_never_refuses() -> None:
    short = _row(0.57, 0.60)
    assert not gate.hand(short)
    assert gate.hybrid(short, 0.9, 0.5, 0.05, rescue=True)
    assert not gate.hybrid(short, 0.1, 0.5, 0.05, rescue=True)
    assert not gate.hybrid(_row(0.50, 0.60), 0.9, 0.5, 0.05, rescue=True)  # farther short than the margin
    passing = _row(0.62, 0.60)
    assert gate.hybrid(passing, 0.1, 0.5, 0.05, rescue=True)  # the rescue gate never refuses
    assert not gate.hybrid(passing, 0.1, 0.5, 0.05)  # the two-sided hybrid does
    assert not gate.hybrid(_row(0.57, 0.60, unknown=True), 0.9, 0.5, 0.05, rescue=True)  # other checks hold


def test_fit_orders_by_the_separating_feature() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = (x[:, 1] + 0.2 * rng.normal(size=200) > 0).astype(float)
    model = gate.fit(x, y)
    assert model.weights[1] > 2 * max(abs(model.weights[0]), abs(model.weights[2]))
    p = model.prob(x)
    assert ((p >= 0.5) == (y == 1)).mean() > 0.9


def test_figures_count_as_kb_eval_does() -> None:
    rows = [
        {"covered": True, "right": True},
        {"covered": True, "right": False},
        {"covered": False, "right": False},
        {"covered": False, "right": False},
    ]
    assert gate.figures(rows, [True, True, False, True]) == (0.5, 0.5)
