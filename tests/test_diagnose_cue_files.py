"""Cue files (crash_cues/*.yaml): extra weak-evidence cues merged into crash_cues.yaml's categories."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tpu_runtime.diagnose.crash_cues import CUES_FILE, CueConfig, load_cues, merge_cue_files, weak_vote

#: Wordings the cues alone must place, with the category each belongs to.
UNSEEN_WORDINGS = yaml.safe_load(
    (Path(__file__).parent / "data" / "diagnose" / "unseen_cue_wordings.yaml").read_text(encoding="utf-8")
)


def _plain(tmp_path: Path) -> CueConfig:  # the main file alone, without the cue files beside it
    copy = tmp_path / "crash_cues.yaml"
    copy.write_text(CUES_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    return load_cues(copy, families=None)


def test_shipped_packs_join_the_main_file_categories(tmp_path: Path) -> None:
    plain = _plain(tmp_path)
    merged = load_cues()
    assert [g.category for g in plain.categories] == [g.category for g in merged.categories]
    host_plain = next(g for g in plain.categories if g.category == "host_oom")
    host = next(g for g in merged.categories if g.category == "host_oom")
    assert len(host.cues) > len(host_plain.cues)
    assert host.cues[: len(host_plain.cues)] == host_plain.cues


@pytest.mark.parametrize(("lines", "category"), [(w["lines"], w["category"]) for w in UNSEEN_WORDINGS])
def test_weak_cues_decide_unseen_wordings(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category, vote


def test_pack_cue_labels_must_be_new(tmp_path: Path) -> None:
    config = _plain(tmp_path)
    label = next(g for g in config.categories if g.category == "host_oom").cues[0].label
    (tmp_path / "dup.yaml").write_text(
        "categories:\n  - category: host_oom\n    cues:\n"
        f"      - label: '{label}'\n        regex: 'x'\n        weight: 0.5\n"
    )
    packs = tmp_path / "packs"
    packs.mkdir()
    (tmp_path / "dup.yaml").rename(packs / "dup.yaml")
    with pytest.raises(ValueError, match="already used"):
        merge_cue_files(config, packs)


def _override_config(tmp_path: Path, overrides: str) -> CueConfig:
    """Two categories where version_mismatch suppresses runtime_init_failure, as in the shipped file."""
    path = tmp_path / f"cues_{len(overrides)}.yaml"  # load_cues caches by path
    path.write_text(
        "categories:\n"
        "  - category: version_mismatch\n    suppresses: [runtime_init_failure]\n    cues:\n"
        "      - label: 'missing attribute'\n        regex: 'has no attribute'\n        weight: 0.5\n"
        "  - category: runtime_init_failure\n    cues:\n"
        "      - label: 'platform gone'\n        regex: 'only supports TPU VMs'\n        weight: 0.6\n"
        f"        overrides: {overrides}\n",
        encoding="utf-8",
    )
    return load_cues(path, families=None)


def test_a_cue_stating_the_cause_overrides_the_symptoms_printed_before_it(tmp_path: Path) -> None:
    lines = [
        "AttributeError: module 'jax.tree_util' has no attribute 'register_x'",
        "RuntimeError: JAX only supports TPU VMs, not the older Colab TPUs.",
    ]
    # Without the override the symptom's category suppresses the stated cause.
    symptom = weak_vote(lines, _override_config(tmp_path, "[]"))
    assert symptom is not None and symptom.category == "version_mismatch"
    vote = weak_vote(lines, _override_config(tmp_path, "[version_mismatch]"))
    assert vote is not None and vote.category == "runtime_init_failure"
    # The override acts only when its own cue fires: the attribute error alone stays a version mismatch.
    alone = weak_vote(lines[:1], _override_config(tmp_path, "[version_mismatch]"))
    assert alone is not None and alone.category == "version_mismatch"


def test_a_bare_killed_word_inside_a_sentence_is_not_an_oom() -> None:
    for line in ("RuntimeError: worker 3 was killed by the scheduler, see its log", "Killed 3 stale workers"):
        vote = weak_vote([line])
        assert vote is None or vote.category != "host_oom", line
    vote = weak_vote(["step 10 loss 2.1", "Killed"])
    assert vote is not None and vote.category == "host_oom"
