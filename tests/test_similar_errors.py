"""Similar known errors: the shipped set comes from the dev half alone, and the fallback decides only when a
log's error lines are close enough to a known error's (tpu_runtime/diagnose/similar_errors.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose import tfidf
from tpu_runtime.diagnose.crash_corpus import (
    CORPUS_DIR,
    entry_split,
    load_corpus,
    score_file,
    split_of,
)
from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log, log_lines
from tpu_runtime.diagnose.known_errors import (
    KnownError,
    decisive_lines,
    load_known_errors,
    load_known_weights,
    normalise_line,
)
from tpu_runtime.diagnose.known_errors_build import build_known_errors
from tpu_runtime.diagnose.similar_errors import (
    SUB_RULE,
    SimilarError,
    SimilarErrors,
    meets_beyond_the_exception,
)

CORPUS = load_corpus()
HBM_LOG = Path(__file__).parent / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"
# A wording no crash rule or cue knows (checked in each test that relies on it).
ODD = "FrobnicatorError: the zyzzyva quux widget refused to spin at step {step} on host {host}\n"
ODD_ENTRY = KnownError(
    file="syn.log",
    round="first",
    category="collective_timeout",
    lines=[normalise_line(ODD.format(step=7, host=0))],
    remedy="Restart the zyzzyva quux widget on every host before the step loop starts.",
    remedy_keys=["zyzzyva"],
    source="https://example.org/issues/1",
)


def _lines(name: str) -> list[str]:
    return log_lines((CORPUS_DIR / name).read_bytes().decode("utf-8", "replace"))[0]


def test_normalise_line_collapses_what_varies_between_runs() -> None:
    a = normalise_line(
        "E1103 09:12:44.118203  20417 tpu.cc:88] Allocation of f32[16,4096] at 0x7f3a2c00 in /srv/a/b.py"
    )
    b = normalise_line(
        "E0204 11:02:01.000001  31 tpu.cc:91] Allocation of f32[8,128,2] at 0x55aa in /home/u/c/d.py"
    )
    assert a == b == "allocation of f32[n] at hex in path"


def test_shipped_known_errors_come_from_the_dev_half_only() -> None:
    known = load_known_errors()
    assert len(known) > 200
    assert all(
        entry.file in CORPUS and entry_split(entry.file, CORPUS[entry.file]) == "dev" for entry in known
    )
    for entry in known:  # the corpus's labels, unchanged
        assert (entry.category, entry.source) == (CORPUS[entry.file].category, CORPUS[entry.file].source)


def test_shipped_known_errors_cover_every_dev_file() -> None:
    """A dev file added to the corpus needs its entry (one without error lines has none): run `python
    benchmarks/build_known_errors.py`."""
    dev = {name for name, entry in CORPUS.items() if entry_split(name, entry) == "dev"}
    missing = dev - {entry.file for entry in load_known_errors()}
    assert [name for name in sorted(missing) if decisive_lines(_lines(name))] == []


def test_builder_refuses_a_held_back_file(tmp_path: Path) -> None:
    """A synthetic corpus of one dev and one held-back name (split_of decides): only the first is built."""
    dev, held = "syn0.log", "syn1.log"
    assert (split_of(dev), split_of(held)) == ("dev", "held_back")
    index = ""
    for name in (dev, held):
        (tmp_path / name).write_text(ODD.format(step=1, host=2), encoding="utf-8")
        index += (
            f"{name}:\n  category: unknown\n  remedy: restart the quux widget first\n"
            "  remedy_keys: [quux]\n  source: https://example.org/x\n"
        )
    (tmp_path / "index.yaml").write_text(index, encoding="utf-8")
    built = build_known_errors([dev], folder=tmp_path)
    assert [entry.file for entry in built] == [dev]
    with pytest.raises(ValueError, match="held-back"):
        build_known_errors([dev, held], folder=tmp_path)


@pytest.mark.parametrize(
    "name",
    [
        "coll_jax_wait_barrier_non_participating_task.log",
        "coll_levanter_straggler_shutdown_barrier.log",
        "coll_jax_test_kv_store_config_key_not_found.log",
    ],
)
def test_a_dev_file_finds_its_own_entry(name: str) -> None:
    assert split_of(name) == "dev"
    index = SimilarErrors(load_known_errors())
    found = index.nearest(_lines(name))
    assert found is not None and found.known.file == name and found.similarity > 0.99
    assert normalise_line(found.line) == found.known_line
    # left out, it is not its own neighbour
    other = index.excluding({name}).nearest(_lines(name))
    assert other is None or other.known.file != name


def test_below_the_threshold_the_log_stays_unknown() -> None:
    text = ODD.format(step=40, host=3) + "SpindleError: quux spindle count 3 is not a prime number\n"
    assert diagnose_log(text, "-", similar=SimilarErrors(())).category == "unknown"  # rules and cues: none
    found = SimilarErrors([ODD_ENTRY]).nearest(log_lines(text)[0])
    assert found is not None and 0.3 < found.similarity < 0.99
    above = SimilarErrors([ODD_ENTRY], threshold=found.similarity + 0.01)
    assert diagnose_log(text, "-", similar=above).category == "unknown"
    below = SimilarErrors([ODD_ENTRY], threshold=found.similarity - 0.01)
    assert diagnose_log(text, "-", similar=below).category == "collective_timeout"


def test_a_log_the_rules_classify_is_not_changed() -> None:
    text = HBM_LOG.read_text(encoding="utf-8")
    plain = diagnose_log(text, "-", similar=SimilarErrors(()))
    assert plain.category == "hbm_oom" and "/" in plain.evidence.fix_rule
    assert not plain.evidence.fix_rule.endswith(SUB_RULE)
    assert diagnose_log(text, "-", similar=SimilarErrors([ODD_ENTRY], threshold=0.0)) == plain
    assert diagnose_log(text, "-") == plain  # the shipped set


def test_the_json_names_the_sub_rule_the_neighbour_and_the_line() -> None:
    text = ODD.format(step=12, host=5)
    crash = diagnose_log(text, "-", similar=SimilarErrors([ODD_ENTRY]))
    data = crash.model_dump(mode="json")
    assert data["category"] == "collective_timeout"
    assert data["evidence"]["fix_rule"] == f"collective_timeout/{SUB_RULE}"
    assert data["evidence"]["lines"][0] == text.strip()
    assert ODD_ENTRY.lines[0] in data["evidence"]["fix_reason"]
    assert data["citations"][0]["url"] == ODD_ENTRY.source
    assert data["fix"].startswith(f"The closest known error (similarity 1.00) is {ODD_ENTRY.source}")
    assert ODD_ENTRY.remedy in data["fix"]
    assert data["facts"]["similar_known_error"]["file"] == "syn.log"
    assert 0.0 < data["confidence"] <= 0.6


def test_only_the_neighbours_remedy_earns_remedy_credit() -> None:
    """The next steps after the neighbour's remedy were not chosen by similarity: keys they name do not
    count, the neighbour's remedy's do."""
    crash = diagnose_log(ODD.format(step=1, host=1), "-", similar=SimilarErrors([ODD_ENTRY]))
    entry = CORPUS["coll_jax_wait_barrier_non_participating_task.log"]
    named = entry.model_copy(update={"category": "collective_timeout", "remedy_keys": ["zyzzyva"]})
    assert score_file("x.log", named, crash).remedy_ok
    tail_word = crash.fix.split(":")[-1].split()[0]  # a word of the unknown log's next steps
    assert tail_word.lower() not in ODD_ENTRY.remedy.lower()
    unnamed = named.model_copy(update={"remedy_keys": [tail_word]})
    assert not score_file("x.log", unnamed, crash).remedy_ok


def test_decisive_lines_skip_traceback_boilerplate() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "train.py", line 3, in <module>',
        "The above exception was the direct cause of the following exception:",
        "ValueError: mesh axis 'data' of size 8 does not divide 12",
    ]
    assert [norm for _, norm in decisive_lines(lines)] == [
        "valueerror: mesh axis 'data' of size n does not divide n"
    ]


def test_decisive_lines_skip_jax_traceback_filtering_notes() -> None:
    """jax prints the same two notes around every filtered traceback; they name no failure, so a fact about
    traceback filtering or a neighbour sharing only them must not be picked from them."""
    lines = [
        "jax._src.source_info_util.JaxStackTraceBeforeTransformation: NotImplementedError: no rule for op",
        "The preceding stack trace is the source of the JAX operation that, once transformed by JAX,"
        " triggered the following exception.",
        "NotImplementedError: no rule for op",
        "For simplicity, JAX has removed its internal frames from the traceback of the following exception."
        " Set JAX_TRACEBACK_FILTERING=off to include these.",
    ]
    assert [norm for _, norm in decisive_lines(lines)] == [
        "notimplementederror: no rule for op",
        "jax._src.source_info_util.jaxstacktracebeforetransformation: notimplementederror: no rule for op",
    ]


def test_a_category_paragraph_gets_the_remedy_of_a_neighbour_of_the_same_category() -> None:
    """With every sub-rule removed the HBM log gets only its category's paragraph; a known error of the
    same category names its remedy first, one of another category changes nothing."""
    from tpu_runtime.diagnose.crashlog import load_rules

    text = HBM_LOG.read_text(encoding="utf-8")
    bare = [rule.model_copy(update={"fixes": []}) for rule in load_rules()]
    none = SheetFacts(())  # no fact of the sheets: this test is about the similar known errors alone
    plain = diagnose_log(text, "-", bare, similar=SimilarErrors(()), sheets=none)
    assert plain.category == "hbm_oom" and plain.evidence.fix_rule == "hbm_oom"
    lines = [norm for _, norm in decisive_lines(log_lines(text)[0])]
    same = ODD_ENTRY.model_copy(update={"category": "hbm_oom", "lines": lines, "file": "hbm.log"})
    crash = diagnose_log(text, "-", bare, similar=SimilarErrors([same]), sheets=none)
    assert crash.category == "hbm_oom" and crash.evidence.fix_rule == f"hbm_oom/{SUB_RULE}"
    assert crash.fix.startswith("The closest known error") and plain.fix in crash.fix
    other = same.model_copy(update={"category": "host_oom"})
    assert diagnose_log(text, "-", bare, similar=SimilarErrors([other]), sheets=none) == plain


# Entries of our own wording for the guard: a setting check, a truncated file, and ODD_ENTRY.
RATIO_ENTRY = ODD_ENTRY.model_copy(
    update={
        "file": "ratio.log",
        "category": "runtime_init_failure",
        "lines": [normalise_line("ValueError: spool_ratio must be positive, got 0")],
        "remedy": "Give --spool-ratio a positive value, or leave the spool off.",
        "remedy_keys": ["spool-ratio"],
    }
)
SHARD_ENTRY = ODD_ENTRY.model_copy(
    update={
        "file": "shard.log",
        "category": "runtime_init_failure",
        "lines": [
            normalise_line(
                "OSError: weight shard /mnt/ckpt/run_7/part-00003.bin is truncated: expected 4194304 bytes, "
                "read 1048576"
            )
        ],
        "remedy": "Copy the weight shards again; a truncated shard never loads.",
        "remedy_keys": ["weight shards"],
    }
)
GUARD_ENTRIES = [RATIO_ENTRY, SHARD_ENTRY, ODD_ENTRY]


def test_the_guard_refuses_a_neighbour_met_on_generic_words_alone() -> None:
    """No known error says "learning rate", so unguarded the log meets the spool setting's check on
    `valueerror` and `positive` alone and is lent its category and another program's flag."""
    text = "starting\nValueError: learning rate must be positive\n"
    # rules and word cues: none; only the final tier's reading of a bare check exception (gm46)
    alone = diagnose_log(text, "-", similar=SimilarErrors(()))
    assert alone.category == "runtime_init_failure" and alone.facts["evidence_tier"] == "weak"
    assert not alone.evidence.fix_rule.endswith(SUB_RULE)
    open_index = SimilarErrors(GUARD_ENTRIES)
    found = open_index.nearest(log_lines(text)[0])
    assert found is not None and found.known.file == "ratio.log" and found.similarity >= 0.5
    assert diagnose_log(text, "-", similar=open_index).evidence.fix_rule.endswith(SUB_RULE)
    guarded = SimilarErrors(GUARD_ENTRIES, guard=True)
    assert guarded.nearest(log_lines(text)[0]) is None
    crash = diagnose_log(text, "-", similar=guarded)
    assert not crash.evidence.fix_rule.endswith(SUB_RULE) and "--spool-ratio" not in crash.fix
    # and with the shipped known errors
    shipped = SimilarErrors(load_known_errors(), weights=load_known_weights(), guard=True)
    assert not diagnose_log(text, "-", similar=shipped).evidence.fix_rule.endswith(SUB_RULE)


def test_the_guard_keeps_a_true_neighbour_with_other_numbers_and_paths() -> None:
    text = (
        "loading weights\nOSError: weight shard /data/models/qwen/part-00011.bin is truncated: expected "
        "8388608 bytes, read 0\n"
    )
    assert diagnose_log(text, "-", similar=SimilarErrors(())).category == "unknown"
    crash = diagnose_log(text, "-", similar=SimilarErrors(GUARD_ENTRIES, guard=True))
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule == f"runtime_init_failure/{SUB_RULE}"
    assert SHARD_ENTRY.remedy in crash.fix


def test_the_guard_keeps_a_neighbour_that_shares_an_identifier() -> None:
    """Words no known error has (cosine, warmup, scheduler, linear, decay) pull the guarded cosine below the
    threshold; the setting both name keeps the neighbour, and the same check on another setting is refused."""
    index = SimilarErrors(GUARD_ENTRIES, guard=True)
    tail = " must be positive when a cosine warmup scheduler with linear decay is used, got -1"
    shared = ["ValueError: spool_ratio" + tail]
    found = index.nearest(shared)
    assert found is not None and found.known.file == "ratio.log"
    renamed = ["ValueError: flush_ratio" + tail]
    unguarded = SimilarErrors(GUARD_ENTRIES).nearest(renamed)
    assert unguarded is not None and unguarded.similarity >= 0.5  # unguarded, it would lend
    assert index.nearest(renamed) is None and not index.supported(renamed, RATIO_ENTRY)
    exception_only = ["ValueError: the flush ratio" + tail]  # ValueError is no identifier of the subject
    assert not index.supported(exception_only, RATIO_ENTRY)


def test_the_threshold_is_met_by_the_unrounded_similarity() -> None:
    # a cosine of 0.4997 shows as 0.5 but stays below a threshold of 0.5; 0.5 itself reaches it
    below = SimilarError(known=ODD_ENTRY, cosine=0.4997, line="a", known_line="b")
    assert below.similarity == 0.5 and not below.reaches(0.5)
    at = SimilarError(known=ODD_ENTRY, cosine=0.5, line="a", known_line="b")
    assert at.reaches(0.5)


# An entry of our own wording raised by a dotted exception class with a status code, as XLA's errors are.
WIDGET_ENTRY = ODD_ENTRY.model_copy(
    update={
        "file": "widget.log",
        "category": "runtime_init_failure",
        "lines": [
            normalise_line(
                "frobnic.runtime_ext.WidgetRuntimeError: NOT_FOUND: no zyzzyva device in spindle_pool."
            )
        ],
        "remedy": "Attach the zyzzyva device to the node before the job starts.",
        "remedy_keys": ["zyzzyva device"],
    }
)
WIDGET_ENTRIES = [*GUARD_ENTRIES, WIDGET_ENTRY]
MADE_UP = "frobnic.runtime_ext.WidgetRuntimeError: INTERNAL: something nobody has seen before\n"


def test_a_neighbour_met_on_the_exception_class_alone_is_refused() -> None:
    """The made-up line's other words are in no entry and weigh nothing, so its cosine with the entry of
    the same dotted class reaches the threshold on the class alone; the index refuses that neighbour, with
    or without the guard, and keeps one that shares the failure's own words."""
    index = SimilarErrors(WIDGET_ENTRIES)
    weights = tfidf.fit([e.document for e in WIDGET_ENTRIES])
    made_up = normalise_line(MADE_UP)
    query = weights.vector(made_up)
    assert tfidf.cosine(query, weights.vector(WIDGET_ENTRY.document)) >= index.threshold
    assert not meets_beyond_the_exception(made_up, query, weights.vector(WIDGET_ENTRY.document))
    assert index.nearest(log_lines(MADE_UP)[0]) is None
    assert SimilarErrors(WIDGET_ENTRIES, guard=True).nearest(log_lines(MADE_UP)[0]) is None
    crash = diagnose_log("starting\n" + MADE_UP, "-", similar=index)
    assert not crash.evidence.fix_rule.endswith(SUB_RULE) and WIDGET_ENTRY.remedy not in crash.fix
    real = "frobnic.runtime_ext.WidgetRuntimeError: NOT_FOUND: no zyzzyva device in spindle_pool 3.\n"
    found = index.nearest(log_lines(real)[0])
    assert found is not None and found.known.file == "widget.log" and found.reaches(index.threshold)


def test_the_guard_does_not_count_an_exception_class_as_a_shared_identifier() -> None:
    """Words no entry has pull the guarded cosine below the threshold; the dotted class both name is no
    identifier of the failure, while the setting both name still is."""
    index = SimilarErrors(WIDGET_ENTRIES, guard=True)
    tail = " while the quux spindle warmed its cache for the second replica"
    assert not index.supported(["frobnic.runtime_ext.WidgetRuntimeError: INTERNAL:" + tail], WIDGET_ENTRY)
    assert index.supported(["frobnic.runtime_ext.WidgetRuntimeError: spindle_pool" + tail], WIDGET_ENTRY)
