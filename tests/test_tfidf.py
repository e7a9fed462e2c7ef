"""The TF-IDF weights applied in plain Python give scikit-learn's vectors, and the shipped weights are the
ones fitted on the shipped known errors (tpu_runtime/diagnose/tfidf.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from tpu_runtime.diagnose import tfidf
from tpu_runtime.diagnose.known_errors import KNOWN_WEIGHTS_FILE, load_known_errors, load_known_weights

DOCS = [
    "ran out of memory in memory space hbm \n used n of n hbm",
    "mosaic failed to compile tpu kernel: unsupported input data type in matrix multiplication",
    "the tpu is already in use by process with pid n \n unable to initialize backend tpu",
    "xla_python_client_mem_fraction must be between n and n",
]
QUERIES = [
    "ran out of memory in memory space vmem hbm hbm",
    "failed to compile mosaic kernel",
    "nothing here the of and is",  # stop words and unknown words only
    "",
]


def _sklearn() -> TfidfVectorizer:
    return TfidfVectorizer(
        analyzer="word", token_pattern=tfidf.TOKEN, stop_words="english", sublinear_tf=True, lowercase=False
    ).fit(DOCS)


@pytest.mark.parametrize("text", QUERIES + DOCS)
def test_vector_is_scikit_learns_transform(text: str) -> None:
    vectorizer = _sklearn()
    dense = vectorizer.transform([text]).toarray()[0]
    expected = {word: float(dense[i]) for word, i in vectorizer.vocabulary_.items() if dense[i] != 0.0}
    got = tfidf.fit(DOCS).vector(text)
    assert got.keys() == expected.keys()
    assert got == pytest.approx(expected, rel=1e-12)


def test_cosine_is_scikit_learns_dot_product() -> None:
    vectorizer = _sklearn()
    weights = tfidf.fit(DOCS)
    expected = (vectorizer.transform(QUERIES) @ vectorizer.transform(DOCS).T).toarray()
    for i, query in enumerate(QUERIES):
        for j, doc in enumerate(DOCS):
            got = tfidf.cosine(weights.vector(query), weights.vector(doc))
            assert got == pytest.approx(float(expected[i, j]), abs=1e-12)


def test_stop_words_and_unknown_words_weigh_nothing() -> None:
    weights = tfidf.fit(DOCS)
    assert "the" not in weights.idf and "memory" in weights.idf
    assert weights.vector("nothing here the of and is") == {}
    assert tfidf.fit([]).vector("ran out of memory") == {}


def test_unseen_words_count_in_the_length_when_asked() -> None:
    """With an IDF for unseen words, a word outside the vocabulary lowers the known words' share, while a
    word in `ignore` (a stop word) still weighs nothing."""
    weights = tfidf.TfidfWeights({"positive": 2.0, "valueerror": 1.0})
    plain = weights.vector("valueerror learning must be positive")
    assert set(plain) == {"positive", "valueerror"}
    counted = weights.vector("valueerror learning must be positive", unseen=3.0, ignore={"must", "be"})
    assert set(counted) == {"positive", "valueerror", "learning"}
    assert abs(sum(w * w for w in counted.values()) - 1.0) < 1e-9
    assert counted["positive"] < plain["positive"]
    assert tfidf.words("valueerror: spool_ratio n") == {"valueerror", "spool_ratio"}  # 2+ characters


def test_weights_round_trip_and_refuse_another_tokenizer(tmp_path: Path) -> None:
    weights = tfidf.fit(DOCS)
    path = tmp_path / "w.json"
    path.write_text(weights.to_json(), encoding="utf-8")
    assert tfidf.TfidfWeights.load(path) == weights
    path.write_text(weights.to_json().replace('"english"', '"french"'), encoding="utf-8")
    with pytest.raises(ValueError, match="another tokenizer"):
        tfidf.TfidfWeights.load(path)


def test_shipped_weights_are_fitted_on_the_shipped_known_errors() -> None:
    """After the corpus or the rules change, run `python benchmarks/build_known_errors.py`: it writes both."""
    shipped = load_known_weights()
    assert shipped is not None, f"{KNOWN_WEIGHTS_FILE} is missing"
    fitted = tfidf.fit([entry.document for entry in load_known_errors()])
    assert shipped.idf.keys() == fitted.idf.keys()
    assert dict(shipped.idf) == pytest.approx(dict(fitted.idf), rel=1e-15)
