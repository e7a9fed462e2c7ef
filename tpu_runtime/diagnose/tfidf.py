"""TF-IDF word vectors applied in plain Python, with weights that scikit-learn fits when the data is built.

Crash triage's fallback (similar_errors) compares a log's error lines with a few hundred known errors.
Fitting the weights takes scikit-learn (its English stop words, its smoothed IDF); applying fitted weights
is a dictionary lookup and a logarithm per word. So the weights are fitted once, when
`benchmarks/build_known_errors.py` writes the known errors, and shipped beside them
(`tpu_runtime/data/known_errors_tfidf.json`): a `diagnose` run that reaches the fallback no longer imports
scikit-learn and SciPy (about 0.7 s). `TfidfWeights.vector` gives what the fitted vectorizer's
`transform` gives (sublinear term frequency, IDF, unit length); tests/test_tfidf.py checks it against
scikit-learn.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STOP_WORDS", "TOKEN", "TfidfWeights", "cosine", "fit", "words"]

TOKEN = r"[a-z_][a-z0-9_]+"
"""Words of a normalised line: identifiers and words, not the N, HEX and PATH placeholders' digits."""
STOP_WORDS = "english"
"""scikit-learn's English stop words: "must be", "is not", "of the" say nothing about which failure it is."""
_TOKEN = re.compile(TOKEN)

Vector = dict[str, float]
"""A unit-length sparse vector: word to weight (absent words weigh nothing)."""


@dataclass(frozen=True)
class TfidfWeights:
    """The fitted vocabulary and each word's IDF: what `vector` needs to weigh a new text's words."""

    idf: Mapping[str, float]

    def vector(self, text: str, unseen: float = 0.0, ignore: Collection[str] = ()) -> Vector:
        """The text's unit-length TF-IDF vector over the fitted vocabulary (other words are ignored, as
        the fitted vectorizer ignores them); empty when no word of the text is in the vocabulary.

        With `unseen` > 0, a word outside the vocabulary and not in `ignore` (the stop words) weighs that
        IDF instead of nothing: what the text says that no fitted document says then counts in its length
        (similar_errors' guard)."""
        tokens = _TOKEN.findall(text)
        counts = Counter(w for w in tokens if w in self.idf or (unseen > 0.0 and w not in ignore))
        weights = {
            word: (1.0 + math.log(counts[word])) * self.idf.get(word, unseen) for word in sorted(counts)
        }
        norm = math.sqrt(sum(w * w for w in weights.values()))
        return {word: w / norm for word, w in weights.items()} if norm > 0.0 else {}

    def to_json(self) -> str:
        """The weights as JSON, one word a line in word order, so a rebuild's diff shows what changed."""
        return (
            json.dumps(
                {"token": TOKEN, "stop_words": STOP_WORDS, "idf": dict(self.idf)}, indent=0, sort_keys=True
            )
            + "\n"
        )

    @classmethod
    def load(cls, path: Path) -> TfidfWeights:
        """Weights written by `to_json`; ValueError when they were fitted with another tokenizer."""
        data = json.loads(path.read_text(encoding="utf-8"))
        if (data.get("token"), data.get("stop_words")) != (TOKEN, STOP_WORDS):
            raise ValueError(
                f"{path} was fitted with another tokenizer: rebuild it (benchmarks/build_known_errors.py)"
            )
        return cls({str(word): float(idf) for word, idf in data["idf"].items()})


def fit(documents: Sequence[str]) -> TfidfWeights:
    """Weights fitted on the documents by scikit-learn's vectorizer (imported here only); none for none."""
    if not documents:
        return TfidfWeights({})
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(
        analyzer="word", token_pattern=TOKEN, stop_words=STOP_WORDS, sublinear_tf=True, lowercase=False
    )
    vectorizer.fit(documents)
    return TfidfWeights(
        {word: float(vectorizer.idf_[i]) for word, i in sorted(vectorizer.vocabulary_.items())}
    )


def words(text: str) -> set[str]:
    """The words of a text as the vectorizer reads them, stop words included."""
    return set(_TOKEN.findall(text))


def cosine(a: Vector, b: Vector) -> float:
    """The cosine similarity of two unit-length vectors: the sum of the products of their shared words."""
    if len(b) < len(a):
        a, b = b, a
    return sum(w * b[word] for word, w in a.items() if word in b)
