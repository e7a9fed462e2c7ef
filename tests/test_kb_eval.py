"""The team's evaluation set (tests/data/kb_eval.yaml) against the real corpus.

The full set runs on the full corpus in lexical mode (a few seconds to build); the hybrid path runs on a
representative subset (two fact sheets embedded, every "not covered" question) to stay fast on a busy
2-core machine. `python benchmarks/kb_eval.py --build` scores both halves of the full set in hybrid mode
(the figures in the README); the assertions here are regression floors, not those figures.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.kb_helpers import lexical_index as tiny_lexical_index
from tpu_runtime.knowledge.build import BuildRequest, run_kb_build
from tpu_runtime.knowledge.evaluate import EvalCase, Expect, answer_reach, fold, half, load_cases, score
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

CASES = load_cases(REPO / "tests" / "data" / "kb_eval.yaml")
SUBSET_SHEETS = ("pallas_tpu.md", "xla_flags.md")


def test_the_set_is_big_enough_and_well_formed() -> None:
    uncovered = [c for c in CASES if not c.covered]
    assert len(CASES) >= 300 and len(uncovered) >= 70
    assert all(c.expect and c.answer and c.url and c.url.startswith("https://") for c in CASES if c.covered)
    assert len({c.q for c in CASES}) == len(CASES) and len({c.id for c in CASES}) == len(CASES)
    assert sum(1 for c in CASES if c.kind == "exact") >= 20
    for name in ("dev", "held-back"):  # both halves can be scored on their own
        part = [c for c in CASES if c.half == name]
        assert sum(1 for c in part if c.covered) >= 60 and sum(1 for c in part if not c.covered) >= 20


def test_halves_follow_the_id_hash_and_quotes_are_checked_for_every_term() -> None:
    assert {half(c.id) for c in CASES} == {"dev", "held-back"}
    assert half("hw-v3-mxu") == half("hw-v3-mxu")  # a function of the id alone
    case = EvalCase(id="x", q="q", answer=["two", "MXU"], url="https://e.org", expect=[{"path": "p"}])
    assert case.quote_answers("Each v3 TensorCore has two  matrix units (MXUs)")
    assert not case.quote_answers("Each v3 TensorCore has four MXUs")
    assert not EvalCase(id="y", q="q", covered=False).quote_answers("anything")


def test_folds_split_each_half_in_two_by_another_byte_of_the_id_hash() -> None:
    dev = [c for c in CASES if c.half == "dev"]
    for name in ("A", "B"):  # each fold of the dev half has both kinds of case to score
        part = [c for c in dev if c.fold == name]
        assert sum(1 for c in part if c.covered) >= 30 and sum(1 for c in part if not c.covered) >= 10
    # another byte than the half's: each half is cut about in two, not all of it into one fold
    for name in ("dev", "held-back"):
        ids = [c.id for c in CASES if c.half == name]
        assert 0.35 < sum(1 for i in ids if fold(i) == "A") / len(ids) < 0.65


def test_a_missed_answer_is_placed_where_its_key_terms_stand_together(tmp_path: Path) -> None:
    index = tiny_lexical_index(tmp_path, {})

    def case(answer: list[str]) -> EvalCase:
        return EvalCase(id="r", q="q", answer=answer, url="https://e.org", expect=[Expect(path="eager.md")])

    eager = [p for p in index.search("eager mode set_eager_mode", 3).passages if "eager.md" in p.path]
    assert eager, "the eager sheet's passage is retrieved"
    # in the retrieved passage, in another sheet's passage only, and in none (terms apart count as none)
    assert answer_reach(case(["set_eager_mode"]), index, eager) == "retrieved"
    assert answer_reach(case(["PrefetchScalarGridSpec"]), index, eager) == "indexed"
    assert answer_reach(case(["set_eager_mode", "PrefetchScalarGridSpec"]), index, eager) == "absent"


@pytest.fixture(scope="module")
def lexical_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    folder = tmp_path_factory.mktemp("kb_full") / "kb"
    run_kb_build(BuildRequest(folder=folder, dense=False))
    return KnowledgeIndex.open(folder)


@pytest.mark.slow
def test_full_set_lexical(lexical_index: KnowledgeIndex) -> None:
    # lexical is the degraded mode (no model, or vectors still building): floors, not the reported figures
    report = score(lexical_index, CASES)
    assert report.mode == "lexical"
    assert report.recall_at_5 >= 0.95, report.missed
    assert report.answered >= 0.75, report.covered_refused + report.wrong_quote
    assert report.refused >= 0.8, report.uncovered_answered
    # an identifier typed as is finds its passage: every one on the tuned half, a floor on the other
    # (its cases are scored, never read one by one, so no assertion names them)
    exact = {
        name: [r for r in report.results if r.kind == "exact" and r.half == name]
        for name in ("dev", "held-back")
    }
    top5 = {name: [r for r in rows if r.rank is not None and r.rank <= 5] for name, rows in exact.items()}
    assert len(top5["dev"]) == len(exact["dev"]), [
        (r.q, r.rank) for r in exact["dev"] if r not in top5["dev"]
    ]
    assert len(top5["held-back"]) >= 0.9 * len(exact["held-back"])


def _in_subset(case: EvalCase) -> bool:
    return not case.covered or any(e.path.endswith(SUBSET_SHEETS) for e in case.expect)


@pytest.fixture(scope="module")
def hybrid_subset(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    root = tmp_path_factory.mktemp("kb_subset")
    sheets = root / "knowledge"
    sheets.mkdir()
    for name in SUBSET_SHEETS:
        shutil.copy(REPO / "knowledge" / name, sheets / name)
    (root / "packages.yaml").write_text("packages: []\n")
    request = BuildRequest(folder=root / "kb", knowledge_folder=sheets, packages_file=root / "packages.yaml")
    assert run_kb_build(request).dense_ready
    return KnowledgeIndex.open(root / "kb")


@pytest.mark.slow
def test_subset_hybrid(hybrid_subset: KnowledgeIndex) -> None:
    # questions that other sheets answer too may match either; keep only the subset's own sources
    cases = [
        c.model_copy(update={"expect": [e for e in c.expect if e.path.endswith(SUBSET_SHEETS)]})
        for c in CASES
        if _in_subset(c)
    ]
    assert sum(1 for c in cases if c.covered) >= 8
    report = score(hybrid_subset, cases)
    assert report.mode == "hybrid"
    # 1.0 until the sheets passed 4,800 facts; one question whose subset source is an incidental
    # xla_flags.md line now ranks sixth behind new Pallas lines (0.994 measured)
    assert report.recall_at_5 >= 0.99, report.missed
    assert report.refused >= 0.95, report.uncovered_answered  # 33 of 34 measured
    # wording the sheets do not share ('keep it in HBM myself') may be refused or quoted from a near line
    assert report.answered >= 0.7, report.covered_refused + report.wrong_quote  # 0.73 measured
