"""The text classifier for logs the rules leave unknown (tpu_runtime/diagnose/category_model.py): applied in
plain Python it gives scikit-learn's probabilities, its data file round-trips, and crashlog takes its category
only for a log with an error line."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from tpu_runtime.diagnose import category_model
from tpu_runtime.diagnose.category_model import CategoryModel, load_category_model
from tpu_runtime.diagnose.crash_corpus import remedy_text
from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules
from tpu_runtime.diagnose.job import run_diagnose
from tpu_runtime.diagnose.similar_errors import SimilarErrors

REPO = Path(__file__).resolve().parents[1]
PLACED = "NotImplementedError: gizmo offload support when host memory is pinned\n"
"""A line no rule places, which the shipped model places (its class is not the point here)."""
# made-up wordings no crash rule knows, so only the classifier can place them
TEXTS = [
    "step 1 loss 2.0\nFrobnicator: zorbulated the quux buffer beyond its arena",
    "step 7 loss 1.5\nFrobnicator: zorbulated quux arena twice",
    "warming up\nGlimmer handshake refused by peer wobble on port 8476",
    "warming up\nGlimmer handshake refused: wobble peer silent",
    "Snarfle kernel lowering of the plonk op has no emitter",
    "Snarfle lowering: plonk op without emitter for this chip",
]
LABELS = [
    "hbm_oom",
    "hbm_oom",
    "collective_timeout",
    "collective_timeout",
    "unsupported_op",
    "unsupported_op",
]
QUERIES = [
    "RuntimeError: frobnicator zorbulated the quux arena",
    "glimmer wobble refused",
    "plonk op emitter missing in snarfle",
    "nothing the model has seen",
    "",
]


def _sklearn(texts: list[str], labels: list[str]) -> tuple[TfidfVectorizer, LogisticRegression]:
    vectorizer = TfidfVectorizer(token_pattern=category_model.TOKEN, ngram_range=(1, 2), sublinear_tf=True)
    model = LogisticRegression(C=category_model.C, max_iter=2000)
    model.fit(vectorizer.fit_transform([category_model.model_text(t) for t in texts]), labels)
    return vectorizer, model


@pytest.mark.parametrize(("labels", "texts"), [(LABELS, TEXTS), (LABELS[:4], TEXTS[:4])])
def test_probabilities_are_scikit_learns_predict_proba(labels: list[str], texts: list[str]) -> None:
    vectorizer, fitted = _sklearn(texts, labels)
    ours = category_model.fit(texts, labels)  # fewer features than KEPT_FEATURES: nothing pruned
    assert ours.classes == tuple(fitted.classes_)
    for query in QUERIES + texts:
        expected = fitted.predict_proba(vectorizer.transform([category_model.model_text(query)]))[0]
        got = ours.probabilities(query)
        assert [got[c] for c in ours.classes] == pytest.approx(list(expected), abs=1e-9)


def test_pruned_model_is_the_model_refitted_on_the_kept_features() -> None:
    ours = category_model.fit(TEXTS, LABELS, kept=12)
    assert len(ours.features) == 12
    vectorizer = TfidfVectorizer(
        token_pattern=category_model.TOKEN,
        ngram_range=(1, 2),
        sublinear_tf=True,
        vocabulary=sorted(ours.features),
    )
    fitted = LogisticRegression(C=category_model.C, max_iter=2000)
    fitted.fit(vectorizer.fit_transform([category_model.model_text(t) for t in TEXTS]), LABELS)
    for query in QUERIES:
        expected = fitted.predict_proba(vectorizer.transform([category_model.model_text(query)]))[0]
        got = ours.probabilities(query)
        assert [got[c] for c in ours.classes] == pytest.approx(list(expected), abs=1e-9)


def test_data_file_round_trips_and_keeps_the_probabilities() -> None:
    model = category_model.fit(TEXTS, LABELS)
    text = model.to_json()
    again = CategoryModel.from_json(text)
    assert again.to_json() == text  # a rebuild from the same data writes the same file
    assert text.count("\n") > len(model.features)  # one feature a line: diffs show what changed
    for query in QUERIES:
        want, got = model.probabilities(query), again.probabilities(query)
        assert got.keys() == want.keys()
        assert list(got.values()) == pytest.approx(list(want.values()), abs=1e-3)
    with pytest.raises(ValueError, match="another tokenizer"):
        CategoryModel.from_json(text.replace('"tail_chars": 6000', '"tail_chars": 100'))


def test_fewer_than_two_categories_give_an_empty_model() -> None:
    empty = category_model.fit(TEXTS[:2], LABELS[:2])
    assert empty.best("frobnicator zorbulated") is None


@pytest.fixture(scope="module")
def model() -> CategoryModel:
    return dataclasses.replace(category_model.fit(TEXTS, LABELS), min_probability=0.3)


def test_fallback_places_a_log_the_rules_leave_unknown(model: CategoryModel) -> None:
    text = "loading shards\nRuntimeError: Frobnicator zorbulated the quux arena (12 GiB)\n"
    none = SimilarErrors(())
    assert diagnose_log(text, "x.log", similar=none, classifier=category_model.EMPTY).category == "unknown"
    crash = diagnose_log(text, "x.log", similar=none, classifier=model)
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule == "hbm_oom/category_model"
    assert "text classifier" in crash.evidence.fix_reason and "classifier" in crash.cause
    placed = crash.facts[category_model.SUB_RULE]
    assert placed["category"] == "hbm_oom" and placed["probability"] >= 0.3
    rule = next(r for r in load_rules() if r.category == "hbm_oom")
    assert crash.fix.startswith(rule.fix.strip()[:40])
    # the corpus scoring credits only what was chosen for this log: the next steps, not the paragraph
    steps = diagnose_log(text, "x.log", similar=none, classifier=category_model.EMPTY).fix
    assert remedy_text(crash) == steps


def test_fallback_keeps_a_log_without_an_error_line_unknown(model: CategoryModel) -> None:
    text = "step 1 loss 2.0\nfrobnicator zorbulated quux arena\nstep 2 loss 1.9\n"
    best = model.best(text)
    assert best is not None and best[0] == "hbm_oom" and best[1] > 0.3  # the classifier alone would place it
    crash = diagnose_log(text, "x.log", similar=SimilarErrors(()), classifier=model)
    assert crash.category == "unknown"


def test_fallback_keeps_a_log_below_the_least_probability_unknown(model: CategoryModel) -> None:
    text = "RuntimeError: frobnicator glimmer plonk\n"
    best = model.best(text)
    assert best is not None
    strict = dataclasses.replace(model, min_probability=best[1] + 0.01)
    assert diagnose_log(text, "x.log", similar=SimilarErrors(()), classifier=model).category != "unknown"
    assert diagnose_log(text, "x.log", similar=SimilarErrors(()), classifier=strict).category == "unknown"


def test_shipped_model_loads_and_diagnose_does_not_import_scikit_learn() -> None:
    shipped = load_category_model()
    assert "hbm_oom" in shipped.classes and shipped.min_probability == category_model.MIN_PROBABILITY
    assert category_model.MODEL_FILE.stat().st_size < 1_000_000
    code = (
        "import sys\n"
        "from tpu_runtime.diagnose.crashlog import diagnose_log\n"
        f"crash = diagnose_log({PLACED!r}, 'x.log', classifier=True)\n"
        "assert crash.evidence.fix_rule.endswith('/category_model'), crash.evidence\n"
        "assert 'tpu_runtime.diagnose.category_model' in sys.modules  # the classifier was asked\n"
        "print([m for m in ('sklearn', 'scipy') if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_the_diagnose_step_asks_the_shipped_model_for_a_log_a_user_gives(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text(PLACED)
    assert diagnose_log(PLACED, str(path)).category == "unknown"  # a library call asks no classifier
    crash = run_diagnose([str(path)]).crashes[0]
    assert crash.evidence.fix_rule.endswith(f"/{category_model.SUB_RULE}")
    assert crash == diagnose_log(PLACED, str(path), classifier=True)
    assert crash.facts[category_model.SUB_RULE]["probability"] >= category_model.MIN_PROBABILITY


def test_a_launchers_prefix_does_not_change_the_probabilities(model: CategoryModel) -> None:
    text = "loading shards\nRuntimeError: Frobnicator zorbulated the quux arena\n"
    prefixed = "".join(
        f"(EngineCore pid=4242) ERROR 06-03 07:41:11 [core.py:1184] {x}\n" for x in text.splitlines()
    )
    assert model.probabilities(prefixed) == model.probabilities(text)
    long = "step 1 loss 2.0\n" * 2000 + text  # only the tail is read, after its error lines
    error = "RuntimeError: Frobnicator zorbulated the quux arena"
    read = category_model.model_text(long)
    assert read.endswith(text.rstrip("\n")) and read.startswith(error + "\n")
    assert len(read) == len(error) + 1 + category_model.TAIL_CHARS


FILLER = "step 1 loss 2.0 tokens/s 81234\n" * 400  # 12,400 characters: more than the tail the model reads


def test_an_error_line_above_the_tail_is_read_first(model: CategoryModel) -> None:
    error = "RuntimeError: Frobnicator zorbulated the quux arena"
    read = category_model.model_text(error + "\n" + FILLER)
    assert read.startswith(error + "\n") and "step 1 loss" in read  # the error line, then the tail
    best = model.best(error + "\n" + FILLER)
    assert best is not None and best[0] == "hbm_oom"
    # the same words on a line that does not read as an error stay outside the tail: not read
    assert "frobnicator" not in category_model.model_text("Frobnicator zorbulated the quux arena\n" + FILLER)
    # an error line further up than the window read for a huge log is not read either
    far = error + "\n" + FILLER * 2
    assert "frobnicator" not in category_model.model_text(far).lower()


def test_error_lines_are_read_last_first_and_once(model: CategoryModel) -> None:
    text = "ValueError: first glimmer\nstep 1\nValueError: second wobble\nValueError: second wobble\n"
    head = category_model.model_text(text).split("\n")[:2]
    assert head == ["ValueError: second wobble", "ValueError: first glimmer"]


def test_a_model_fitted_on_another_text_is_refused() -> None:
    text = category_model.fit(TEXTS, LABELS).to_json()
    assert f'"reads": "{category_model.READS}"' in text
    with pytest.raises(ValueError, match="another tokenizer"):
        CategoryModel.from_json(text.replace(f'"reads": "{category_model.READS}", ', ""))
