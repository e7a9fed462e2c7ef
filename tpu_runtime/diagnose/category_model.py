"""A text classifier that gives a category to a log the crash rules leave `unknown`, applied in plain Python.

The rules (signatures, weak cues, similar known errors) place most logs; for the rest a linear model over the
log's words often knows the category from wording no rule names: TF-IDF over word unigrams and bigrams of the
log's error lines followed by its last `TAIL_CHARS` characters (normalised), and a multinomial logistic
regression. Across the dev
folds it placed 16 and 8 more files than the rules alone (docs/diagnose-accuracy.md, gm63). It gives a
category, not a remedy: crashlog keeps the category's paragraph and says the classifier placed it.

Fitting takes scikit-learn; applying does not. `benchmarks/build_known_errors.py` fits the model on every dev
file and keeps only the `MAX_FEATURES` words and word pairs that weigh most in any class, then refits on those
alone, so the shipped model (`tpu_runtime/data/category_model.json`) is exact, small and one feature a line,
and a `diagnose` run that reaches it imports neither scikit-learn nor SciPy. `CategoryModel.probabilities`
gives what the fitted model's `predict_proba` gives (tests/test_category_model.py checks it).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_runtime.diagnose.crash_next_steps import error_lines
from tpu_runtime.diagnose.logtext import normalise, strip_prefix
from tpu_runtime.diagnose.report import Category, CrashDiagnosis, CrashEvidence

if TYPE_CHECKING:
    from tpu_runtime.diagnose.crash_specs import CrashRule

__all__ = [
    "EMPTY",
    "MAX_FEATURES",
    "MIN_PROBABILITY",
    "MODEL_FILE",
    "READS",
    "STEPS",
    "SUB_RULE",
    "TAIL_CHARS",
    "TOKEN",
    "CategoryModel",
    "classified_diagnosis",
    "fit",
    "load_category_model",
    "model_text",
]

MODEL_FILE = Path(__file__).resolve().parents[1] / "data" / "category_model.json"
TOKEN = r"[A-Za-z_][A-Za-z0-9_]+"
"""Words (lower-cased before matching, as scikit-learn does): identifiers, not numbers."""
TAIL_CHARS = 6000
"""The error is at the end of a log: its last characters say more than a long run of training output."""
READS = "error_lines+tail"
"""What `model_text` reads, stored in the data file: a model fitted on another text is refused."""
MAX_FEATURES = 50_000
"""The vocabulary the first fit chooses from (the most frequent words and pairs)."""
KEPT_FEATURES = 3000
"""Features kept for the shipped model (largest |coefficient| in any class); the model is refitted on them."""
C = 10.0
MIN_PROBABILITY = 0.52
"""The least probability the classifier must give its class before crashlog takes it (a true unknown's
guard, with the error line it must show)."""
DIGITS = 5
"""Decimals kept in the data file: probabilities differ from the fitted model's by less than 1e-3."""
_TOKEN = re.compile(TOKEN)


def model_text(text: str) -> str:
    """What the classifier reads of a log: the lines that look like errors (crash_next_steps.error_lines, as
    the unknown diagnosis lists them, found in the last `4 * TAIL_CHARS` characters), then the last
    `TAIL_CHARS` characters of its normalised text, each line without the launcher's or logger's prefix
    (logtext.strip_prefix), so the way a log was pasted does not change the words it weighs. The error lines
    come first and so weigh twice when they are in the tail too: on dev fold A (fitted on fold B) this placed
    as many logs right and fewer wrong than the tail alone (docs/diagnose-accuracy.md, gm64)."""
    window = normalise(text[-4 * TAIL_CHARS :])  # a huge log: its tail only
    lines = [strip_prefix(line) for line in window.splitlines()]
    size = 0
    start = len(lines)
    while start > 0 and size <= TAIL_CHARS:
        start -= 1
        size += len(lines[start]) + 1
    return "\n".join([*error_lines(lines), "\n".join(lines[start:])[-TAIL_CHARS:]])


@dataclass(frozen=True)
class CategoryModel:
    """Vocabulary with IDF; per class an intercept and one coefficient per feature (softmax over classes)."""

    classes: tuple[str, ...]
    intercepts: tuple[float, ...]
    features: Mapping[str, tuple[float, tuple[float, ...]]]
    """word or word pair -> (IDF, one coefficient per class)."""
    min_probability: float = 0.0
    """The least probability of its class for the fallback to take it (not stored: crashlog's guard)."""

    def probabilities(self, text: str) -> dict[str, float]:
        """Each class's probability for the log (the fitted model's predict_proba); empty without classes."""
        if not self.classes:
            return {}
        tokens = _TOKEN.findall(model_text(text).lower())
        grams = Counter(t for t in tokens if t in self.features)
        grams.update(g for g in (f"{a} {b}" for a, b in itertools.pairwise(tokens)) if g in self.features)
        weights = {g: (1.0 + math.log(n)) * self.features[g][0] for g, n in grams.items()}
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        scores = list(self.intercepts)
        for gram, w in weights.items():
            for i, coef in enumerate(self.features[gram][1]):
                scores[i] += coef * w / norm
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        total = sum(exps)
        return {c: e / total for c, e in zip(self.classes, exps, strict=True)}

    def best(self, text: str) -> tuple[str, float] | None:
        """The most probable class and its probability; None for an empty model."""
        probs = self.probabilities(text)
        return max(probs.items(), key=lambda kv: (kv[1], kv[0])) if probs else None

    def to_json(self) -> str:
        """The model as JSON, one feature a line in sorted order, so a rebuild's diff shows what changed."""
        head = {"token": TOKEN, "tail_chars": TAIL_CHARS, "reads": READS, "classes": list(self.classes)}
        lines = [json.dumps(head, sort_keys=True)[:-1] + ","]
        lines.append(f'"intercepts": {json.dumps([round(x, DIGITS) for x in self.intercepts])},')
        lines.append('"features": {')
        rows = [
            f"{json.dumps(g)}: {json.dumps([round(idf, DIGITS), [round(c, DIGITS) for c in coefs]])}"
            for g, (idf, coefs) in sorted(self.features.items())
        ]
        lines.append(",\n".join(rows))
        lines.append("}}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "the model") -> CategoryModel:
        """A model written by `to_json`; ValueError when it was fitted with another tokenizer or tail."""
        data = json.loads(text)
        if (data.get("token"), data.get("tail_chars"), data.get("reads")) != (TOKEN, TAIL_CHARS, READS):
            raise ValueError(f"{where} was fitted with another tokenizer: rebuild it (build_known_errors.py)")
        classes = tuple(str(c) for c in data["classes"])
        features = {
            str(g): (float(idf), tuple(float(c) for c in coefs))
            for g, (idf, coefs) in data["features"].items()
        }
        if any(len(coefs) != len(classes) for _, coefs in features.values()):
            raise ValueError(f"{where}: a feature has not one coefficient per class")
        return cls(classes, tuple(float(x) for x in data["intercepts"]), features, MIN_PROBABILITY)


EMPTY = CategoryModel((), (), {})


@functools.cache
def load_category_model(path: Path = MODEL_FILE) -> CategoryModel:
    """The shipped model; an empty one (which places nothing) when the file is absent."""
    return CategoryModel.from_json(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else EMPTY


def fit(texts: Sequence[str], categories: Sequence[str], kept: int = KEPT_FEATURES) -> CategoryModel:
    """The model fitted on the logs (scikit-learn, imported here only): a first fit over up to `MAX_FEATURES`
    words and pairs chooses the `kept` features that weigh most in any class, and the model is refitted on
    those alone, so what is stored is exactly a fitted model. Fewer than two categories: an empty model."""
    if len(set(categories)) < 2:
        return EMPTY
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    docs = [model_text(t) for t in texts]

    def fitted(vocabulary: list[str] | None) -> tuple[TfidfVectorizer, LogisticRegression]:
        vectorizer = TfidfVectorizer(
            token_pattern=TOKEN,
            ngram_range=(1, 2),
            sublinear_tf=True,
            max_features=None if vocabulary else MAX_FEATURES,
            vocabulary=vocabulary,
        )
        model = LogisticRegression(C=C, max_iter=2000)
        model.fit(vectorizer.fit_transform(docs), list(categories))
        return vectorizer, model

    vectorizer, model = fitted(None)
    names = vectorizer.get_feature_names_out()
    if kept < len(names):
        weight = np.abs(model.coef_).max(axis=0)
        order = sorted(range(len(names)), key=lambda i: (-weight[i], names[i]))
        vectorizer, model = fitted(sorted(str(names[i]) for i in order[:kept]))
        names = vectorizer.get_feature_names_out()
    coef, intercept = model.coef_, model.intercept_
    if coef.shape[0] == 1:  # two classes: a sigmoid is the softmax of (-z/2, z/2)
        coef, intercept = np.vstack([-coef / 2, coef / 2]), np.concatenate([-intercept / 2, intercept / 2])
    features = {
        str(name): (float(vectorizer.idf_[i]), tuple(float(c) for c in coef[:, i]))
        for i, name in enumerate(names)
    }
    classes = tuple(str(c) for c in model.classes_)
    return CategoryModel(classes, tuple(float(x) for x in intercept), features, MIN_PROBABILITY)


# ------------------------------------------------------------------------------------------ the fallback

SUB_RULE = "category_model"
"""The facts key and the sub-rule (`<category>/category_model`) of a category the classifier gave."""
STEPS = " If that does not fit this log: "
"""Between the category's paragraph and the unknown log's next steps in the fix: what was chosen for this log
is what follows it (crash_corpus.remedy_text)."""
MAX_CONFIDENCE = 0.5
"""A classified log's confidence at probability 1: below a similar known error's (0.6): a lead to confirm."""


def classified_diagnosis(
    unknown: CrashDiagnosis,
    text: str,
    rules: Mapping[Category, CrashRule],
    model: CategoryModel | None = None,
) -> CrashDiagnosis:
    """The `unknown` diagnosis given the classifier's category (sub-rule `<category>/category_model`), with
    that category's paragraph before the next diagnostic steps (which stay the part chosen for this log),
    when the log shows an error line (a log with none holds no failure to place) and the class is probable
    enough (the model's `min_probability`); otherwise, or for class `unknown`, the diagnosis unchanged."""
    if not unknown.facts.get("error_lines"):
        return unknown
    model = load_category_model() if model is None else model
    found = model.best(text)
    threshold = model.min_probability
    rule = next((r for c, r in rules.items() if found is not None and c == found[0] != "unknown"), None)
    if found is None or found[1] < threshold or rule is None:
        return unknown
    category, probability = found
    facts = {**unknown.facts, SUB_RULE: {"category": category, "probability": round(probability, 3)}}
    why = (
        f"no rule matched; a text classifier fitted on the known logs (tpu_runtime/data/{MODEL_FILE.name}) "
        f"places the log in {category} with probability {probability:.2f} (threshold {threshold:.2f}); the "
        f"category's paragraph, then the next diagnostic steps for this log ({unknown.evidence.fix_rule})"
    )
    return unknown.model_copy(
        update={
            "category": rule.category,
            "title": rule.title,
            "cause": (
                "No known error signature matched; a text classifier fitted on the known logs places this "
                f"one in {rule.title.lower()} (probability {probability:.2f}), so treat the category as a "
                f"lead to confirm. {rule.cause.strip()}"
            ),
            "fix": f"{rule.fix.strip()}{STEPS}{unknown.fix}",
            "facts": facts,
            "citations": list(rule.citations),
            "confidence": round(probability * MAX_CONFIDENCE, 2),
            "evidence": CrashEvidence(
                lines=unknown.evidence.lines, fix_rule=f"{rule.category}/{SUB_RULE}", fix_reason=why
            ),
        }
    )
