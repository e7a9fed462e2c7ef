"""Measure a category classifier as a last fallback for crash logs everything else leaves `unknown`.

Run by hand: `python benchmarks/diagnose_classifier.py [--known-from other-rounds|other-fold] [--show]`.
Dev half only. The rules written for known logs are removed (as `diagnose_corpus.py --ablate`: no signature
pattern, no cause-specific sub-rule), so the weak cues decide alone; then the similar known errors built
from the dev files of the OTHER rounds (folds) at their shipped threshold get their turn. On the dev files
still `unknown` after both, a logistic regression over the same TF-IDF word features as the similar
errors (tfidf), fitted on the known errors of the other rounds (folds), names a category when its top
probability reaches a threshold (an `unknown` top class abstains). For each threshold it counts the files
it places right, places wrong, and the true `unknown` files it places (each of those is wrong too).
The classifier earns a place only if it places clearly more right than wrong and leaves true unknowns
alone; the README paragraph after "Similar known errors" records the figures and the verdict (not kept).
scikit-learn is imported here only: nothing of this ships.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.diagnose.crash_corpus import (  # noqa: E402
    CORPUS_DIR,
    HeldOutBy,
    entry_split,
    held_out_units,
    load_corpus,
)
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, log_lines, without_signatures  # noqa: E402
from tpu_runtime.diagnose.known_errors import KnownError, decisive_lines  # noqa: E402
from tpu_runtime.diagnose.known_errors_build import build_known_errors  # noqa: E402
from tpu_runtime.diagnose.similar_errors import THRESHOLD, SimilarErrors  # noqa: E402
from tpu_runtime.diagnose.tfidf import STOP_WORDS, TOKEN  # noqa: E402

THRESHOLDS = {
    "logreg": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    "svc": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
}
"""Per model, the scores tried: the top class's probability (logreg) or its margin over the next (svc)."""


@dataclass(frozen=True)
class Guess:
    """The classifier's verdict on one file left unknown: its unit, true and top category, probability."""

    name: str
    unit: str
    expected: str
    got: str
    probability: float


def classify(
    train: Sequence[KnownError], queries: Sequence[str], c: float, model_name: str
) -> list[tuple[str, float]]:
    """(top category, its score) per query, from a model fitted on the entries: a logistic regression's
    probability, or a linear SVM's margin of the top class's decision value over the next one's."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    if not queries:
        return []

    vectorizer = TfidfVectorizer(
        analyzer="word", token_pattern=TOKEN, stop_words=STOP_WORDS, sublinear_tf=True, lowercase=False
    )
    x = vectorizer.fit_transform([e.document for e in train])
    labels = [e.category for e in train]
    queried = vectorizer.transform(queries)
    out: list[tuple[str, float]] = []
    if model_name == "svc":
        svm = LinearSVC(C=c).fit(x, labels)
        for row in svm.decision_function(queried):
            order = row.argsort()[::-1]
            out.append((str(svm.classes_[order[0]]), float(row[order[0]] - row[order[1]])))
        return out
    regression = LogisticRegression(C=c, max_iter=2000).fit(x, labels)
    for row in regression.predict_proba(queried):
        best = int(row.argmax())
        out.append((str(regression.classes_[best]), float(row[best])))
    return out


def measure(kind: HeldOutBy, c: float, model_name: str, show: bool) -> list[Guess]:
    """The classifier's guesses on the dev files the ablated rules and the other units' similar errors
    leave unknown, each unit's classifier fitted on the other units' known errors."""
    corpus = {n: e for n, e in load_corpus().items() if entry_split(n, e) == "dev"}
    entries = build_known_errors(corpus)
    rules = without_signatures(fallback_rules())
    units = held_out_units(corpus, kind)
    guesses: list[Guess] = []
    left_total = 0
    for unit, names in sorted(units.items()):
        train = [e for e in entries if e.file not in names]
        index = SimilarErrors(train, THRESHOLD)
        left: list[tuple[str, str]] = []  # (name, query document)
        for name in names:
            text = (CORPUS_DIR / name).read_bytes().decode("utf-8", "replace")
            if diagnose_log(text, name, rules, index).category != "unknown":
                continue
            lines, _ = log_lines(text)
            picked = decisive_lines(lines)
            left.append((name, " \n ".join(norm for _, norm in picked)))
        left_total += len(left)
        with_lines = [(n, q) for n, q in left if q]
        found = classify(train, [q for _, q in with_lines], c, model_name)
        for (name, _), (got, score) in zip(with_lines, found, strict=True):
            guesses.append(Guess(name, unit, corpus[name].category, got, score))
        label = "round" if kind == "other-rounds" else "fold"
        print(
            f"  {label} {unit}: {len(names)} files, left unknown {len(left)}, "
            f"with error lines {len(with_lines)}"
        )
    truly = sum(1 for g in guesses if g.expected == "unknown")
    print(
        f"## dev, {kind}, rules ablated + similar errors at {THRESHOLD}: {left_total} left unknown, "
        f"{len(guesses)} with error lines, {truly} of them truly unknown ({model_name}, C={c})"
    )
    if show:
        for g in sorted(guesses, key=lambda g: -g.probability):
            mark = "ok " if g.got == g.expected else "BAD"
            print(f"  {mark} {g.probability:.2f} {g.name}: expected {g.expected}, got {g.got}")
    return guesses


def tally(guesses: Sequence[Guess], label: str, thresholds: Sequence[float]) -> None:
    """Per threshold: placed right, placed wrong, true unknowns placed (an `unknown` top class abstains)."""
    print(f"  {label}: {len(guesses)} files")
    for threshold in thresholds:
        placed = [g for g in guesses if g.got != "unknown" and g.probability >= threshold]
        right = sum(g.got == g.expected for g in placed)
        unknowns = sum(g.expected == "unknown" for g in placed)
        print(
            f"    score >= {threshold:.1f}: placed {len(placed)}, right {right}, wrong {len(placed) - right} "
            f"(true unknowns placed {unknowns})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--known-from", choices=("other-rounds", "other-fold"), default="other-rounds")
    parser.add_argument("--c", type=float, default=10.0, help="inverse regularisation of the regression")
    parser.add_argument("--model", choices=tuple(THRESHOLDS), default="logreg")
    parser.add_argument("--show", action="store_true", help="print each dev file's guess")
    args = parser.parse_args()
    guesses = measure(args.known_from, args.c, args.model, args.show)
    thresholds = THRESHOLDS[args.model]
    tally(guesses, "all units", thresholds)
    if args.known_from == "other-fold":
        for fold in ("A", "B"):
            tally([g for g in guesses if g.unit == fold], f"fold {fold}", thresholds)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
