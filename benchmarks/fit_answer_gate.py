"""Measure the answer gate's decisions as one learned decision: record, for every dev question of the three
KB sets, the gate's measures of its top quote and whether answering would be right, fit a small logistic
model on fold A, and compare the gates on fold B at the threshold chosen on fold A.

Run by hand: `python benchmarks/fit_answer_gate.py --index DIR [--measures FILE] [--reuse] [--balanced]`.
Only the dev half of each set is read (`evaluate.half`), split by `evaluate.fold`; the held-back half is
never scored. Per question it records the support share of the best passage and the share needed
(`answer_gate.needed_support`), the best cosine, the quoted passage's cosine and its rank in the fused,
BM25 and embedding lists, each whole-retrieval check's pass or fail, the quote's checks (`quote_faults`,
`gate_faults`), the runner-up margin (1 - the second line's score over the first's) and the label: answering
is right when the question is covered and one of the lines quoted holds its answer (`quote_answers`), and
wrong otherwise (an uncovered question, or a quote without the answer: refusing it costs no answer). The
gates compared, each as answered / refused per set and fold, as `benchmarks/kb_eval.py` counts them:
"hand" (the gate as it is; its figures here must equal kb_eval's), "learned" (answer when the model's
probability reaches the threshold), "hybrid" (the hand gate, with the learned score deciding the support
check alone when the share is within a margin of the share needed) and "rescue" (the same, deciding only
a share just short of the need: it can answer a question the hand gate refuses, never refuse one it
answers). The threshold and the margin are chosen on fold A (the largest sum of answered and refused over
the three sets); fold B is only reported. Measured and not shipped: docs/kb-accuracy.md ("A learned gate").
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.knowledge.answer import compose, prepared, read_gate  # noqa: E402
from tpu_runtime.knowledge.evaluate import EvalCase, load_cases, search_depth  # noqa: E402
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {
    "main": DATA / "kb_eval.yaml",
    "paraphrases": DATA / "kb_paraphrase_eval.yaml",
    "refusal": DATA / "kb_refusal_eval.yaml",
}
# the whole-retrieval checks of `answer.compose`, in its order, and the quote's
CHECKS = (
    "cosine",
    "support",
    "unknown",
    "asked",
    "action",
    "elsewhere",
    "stack",
    "capability",
    "no_span",
    "quote",
    "first_quote",
)
FAR_RANK = 50  # rank given to a passage one retriever did not return
MARGINS = (0.05, 0.10, 0.15, 0.20, 0.30, 1.0)  # 1.0: the score decides every share
RIDGE = 1.0  # L2 penalty of the logistic fit (standardised features)


def measures(question: str, index: KnowledgeIndex, result: SearchResult) -> dict[str, Any]:
    """The gate's measures of the top quote, as `answer.compose` reads them (`answer.read_gate`; its
    reasons must agree with compose's verdict: `main` checks), and the lines answering would quote."""
    passages = result.passages
    failed = dict.fromkeys(CHECKS, False)
    row: dict[str, Any] = {"support": 0.0, "need": 0.0, "cos_best": 0.0, "quotes": []}
    if not passages:
        failed["no_span"] = True
        row["failed"] = failed
        return row
    reading = read_gate(prepared(question, index), index, result)
    failed.update({check: fault is not None for check, fault in reading.faults.items()})
    row.update(support=reading.best_support, need=reading.need, cos_best=reading.cos_best or 0.0)
    span = reading.span
    if span is None or not reading.quotable:
        failed["no_span"] = True
        row["failed"] = failed
        return row
    failed["quote"] = bool(reading.quote_reasons)
    failed["first_quote"] = bool(reading.first_quote_reasons)
    also = reading.runner_ups(index)
    ranked = reading.ranked
    at = next(i for i, p in enumerate(passages) if p.chunk_id == span.passage.chunk_id)
    second = ranked[1].overlap / span.overlap if len(ranked) > 1 and span.overlap > 0 else 0.0
    row.update(
        failed=failed,
        quotes=[span.text, *(sp.text for sp in also)],
        quote_cosine=span.passage.cosine if span.passage.cosine is not None else 0.0,
        fused_rank=at + 1,
        lexical_rank=span.passage.lexical_rank or FAR_RANK,
        dense_rank=span.passage.dense_rank or FAR_RANK,
        runner_margin=1.0 - second,
        overlap=span.overlap,
    )
    return row


FEATURES = (
    "support",
    "need",
    "share_gap",
    "cos_best",
    "cos_gap",
    "log_fused_rank",
    "log_lexical_rank",
    "log_dense_rank",
    "runner_margin",
    "log_overlap",
    *(f"fails_{c}" for c in CHECKS),
)


def feature_vector(row: dict[str, Any]) -> list[float]:
    """The model's inputs from one question's measures (ranks on a log scale; no quote: worst values)."""
    cos_best = float(row["cos_best"])
    return [
        float(row["support"]),
        float(row["need"]),
        float(row["support"]) - float(row["need"]),
        cos_best,
        cos_best - float(row.get("quote_cosine", 0.0)),
        math.log(row.get("fused_rank", FAR_RANK)),
        math.log(row.get("lexical_rank", FAR_RANK)),
        math.log(row.get("dense_rank", FAR_RANK)),
        float(row.get("runner_margin", 0.0)),
        math.log(max(float(row.get("overlap", 0.0)), 1e-3)),
        *(float(row["failed"][c]) for c in CHECKS),
    ]


@dataclass
class Model:
    """A logistic model over standardised features: p = sigmoid(bias + weights . (x - mean) / scale)."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float

    def prob(self, x: np.ndarray) -> np.ndarray:
        z = self.bias + ((x - self.mean) / self.scale) @ self.weights
        return 1.0 / (1.0 + np.exp(-z))


def fit(
    x: np.ndarray, y: np.ndarray, ridge: float = RIDGE, steps: int = 50, weight: np.ndarray | None = None
) -> Model:
    """Newton's method on the L2-penalised log loss (the bias unpenalised), each row counted `weight`
    times (default once)."""
    weight = np.ones(len(x)) if weight is None else weight
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    z = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    w = np.zeros(z.shape[1])
    penalty = np.eye(z.shape[1]) * ridge
    penalty[0, 0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        grad = z.T @ (weight * (p - y)) + penalty @ w
        hess = (z.T * (weight * p * (1 - p))) @ z + penalty
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return Model(mean=mean, scale=scale, weights=w[1:], bias=float(w[0]))


def balance(rows: list[dict[str, Any]]) -> np.ndarray:
    """Row weights as the figures count them: each set's covered questions together weigh as much as its
    uncovered ones, and every set as much as another (mean weight 1)."""
    counts: dict[tuple[str, bool], int] = {}
    for r in rows:
        counts[(r["set"], r["covered"])] = counts.get((r["set"], r["covered"]), 0) + 1
    weight = np.array([1.0 / counts[(r["set"], r["covered"])] for r in rows])
    return weight * len(rows) / weight.sum()


def figures(rows: list[dict[str, Any]], answers: list[bool]) -> tuple[float, float]:
    """Answered (covered questions answered with the answer quoted) and refused (uncovered refused)."""
    covered = [(r, a) for r, a in zip(rows, answers, strict=True) if r["covered"]]
    uncovered = [(r, a) for r, a in zip(rows, answers, strict=True) if not r["covered"]]
    answered = sum(1 for r, a in covered if a and r["right"]) / max(len(covered), 1)
    refused = sum(1 for _, a in uncovered if not a) / max(len(uncovered), 1)
    return round(answered, 3), round(refused, 3)


def hand(row: dict[str, Any]) -> bool:
    return not any(row["failed"].values())


def hybrid(row: dict[str, Any], p: float, threshold: float, margin: float, *, rescue: bool = False) -> bool:
    """The hand gate, with the learned score deciding the support check when the share is near the need;
    with `rescue`, only a share just short of the need is decided (the score can answer, never refuse)."""
    others = any(v for c, v in row["failed"].items() if c != "support")
    if others:
        return False
    near = (
        -margin <= row["support"] - row["need"] < 0 if rescue else abs(row["support"] - row["need"]) <= margin
    )
    if near:
        return p >= threshold
    return not row["failed"]["support"]


def choose_hybrid(rows: list[dict[str, Any]], p: np.ndarray, *, rescue: bool = False) -> tuple[float, float]:
    """The margin and threshold of the hybrid gate with the largest `total` on `rows` (fold A)."""
    candidates = sorted({round(float(v), 4) for v in p} | {0.5})
    return max(
        ((m, t) for m in MARGINS for t in candidates),
        key=lambda mt: (
            total(
                rows, [hybrid(r, float(v), mt[1], mt[0], rescue=rescue) for r, v in zip(rows, p, strict=True)]
            ),
            -mt[0],
            -abs(mt[1] - 0.5),
        ),
    )


def total(rows: list[dict[str, Any]], answers: list[bool]) -> float:
    """The sum over the sets of answered plus refused: what the threshold and the margin are chosen by."""
    out = 0.0
    for name in SETS:
        picked = [(r, a) for r, a in zip(rows, answers, strict=True) if r["set"] == name]
        out += sum(figures([r for r, _ in picked], [a for _, a in picked]))
    return out


def collect(index: KnowledgeIndex) -> list[dict[str, Any]]:
    """Every dev question's measures, label, fold and set; stops if the measured hand verdict disagrees
    with `compose`'s (the measures would not be the gate's)."""
    rows = []
    for name, path in SETS.items():
        cases: list[EvalCase] = [c for c in load_cases(path) if c.half == "dev"]
        for case in cases:
            found = index.search(case.q, search_depth())
            row = measures(case.q, index, found)
            row.update(
                set=name,
                id=case.id,
                fold=case.fold,
                covered=case.covered,
                right=case.covered and any(case.quote_answers(q) for q in row["quotes"]),
            )
            verdict = compose(case.q, index, found).covered
            if verdict != hand(row):
                raise SystemExit(f"measures disagree with compose on {name} {case.id}")
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]], gates: dict[str, list[bool]]) -> list[str]:
    lines = ["| set | fold | " + " | ".join(gates) + " |", "|---|---|" + "---:|" * len(gates)]
    for name in SETS:
        for fold in ("A", "B"):
            at = [i for i, r in enumerate(rows) if r["set"] == name and r["fold"] == fold]
            cells = []
            for answers in gates.values():
                a, r = figures([rows[i] for i in at], [answers[i] for i in at])
                cells.append(f"{a:.3f} / {r:.3f}")
            lines.append(f"| {name} | {fold} | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--measures", type=Path, default=None, help="JSON file the measures are kept in")
    parser.add_argument("--reuse", action="store_true", help="read --measures instead of measuring again")
    parser.add_argument(
        "--balanced", action="store_true", help="weigh rows as the figures do (`balance`) in the fit"
    )
    args = parser.parse_args()
    if args.reuse and args.measures:
        rows = json.loads(args.measures.read_text())
    else:
        rows = collect(KnowledgeIndex.open(args.index))
        if args.measures:
            args.measures.write_text(json.dumps(rows))
    rows = [r for r in rows if r["fold"] in ("A", "B")]
    x = np.array([feature_vector(r) for r in rows])
    y = np.array([1.0 if r["right"] else 0.0 for r in rows])
    train = np.array([r["fold"] == "A" for r in rows])
    fold_a = [r for r, t in zip(rows, train, strict=True) if t]
    model = fit(x[train], y[train], weight=balance(fold_a) if args.balanced else None)
    p = model.prob(x)
    pa = p[train]
    candidates = sorted({round(float(v), 4) for v in pa} | {0.5})
    threshold = max(candidates, key=lambda t: (total(fold_a, [bool(v >= t) for v in pa]), -abs(t - 0.5)))
    best = choose_hybrid(fold_a, pa)
    saving = choose_hybrid(fold_a, pa, rescue=True)
    gates = {
        "hand": [hand(r) for r in rows],
        f"learned (p >= {threshold:.3f})": [bool(v >= threshold) for v in p],
        f"hybrid (margin {best[0]:.2f}, p >= {best[1]:.3f})": [
            hybrid(r, float(v), best[1], best[0]) for r, v in zip(rows, p, strict=True)
        ],
        f"rescue (margin {saving[0]:.2f}, p >= {saving[1]:.3f})": [
            hybrid(r, float(v), saving[1], saving[0], rescue=True) for r, v in zip(rows, p, strict=True)
        ],
    }
    print(f"dev questions: {len(rows)} (fold A {int(train.sum())}, fold B {int((~train).sum())})")
    print("weights (standardised):")
    for feature, weight in zip(FEATURES, model.weights, strict=True):
        print(f"  {feature:>18}: {weight:+.3f}")
    print(f"  {'bias':>18}: {model.bias:+.3f}")
    print("answered / refused, dev half:")
    print("\n".join(table(rows, gates)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
