"""Round diag76's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: labelled values a mismatch line lists below it, two counts set side by side with
"vs", a value a feature requires be given (suggestion and cue), a boolean setting refused with "is
True/False", a feature refused in one mode or stage, and xpk's refusals of a cluster, node-pool or workload
request (cue and fallback), with a version number no longer read as a refused feature
(docs/diagnose-accuracy.md, "Round diag76")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.content import classify_text
from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def test_labelled_values_below_a_mismatch_line_name_the_quantity() -> None:
    text = (
        "ValueError: Shard count in the saved state does not match the loader's shard count.\n"
        "shard count in saved state: 8\n"
        "shard count in loader: 4\n"
    )
    assert ("comparison", ("shard count in saved state", "shard count in loader")) in _kinds(text)
    _, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion") and "shard count in saved state: 8" in fix
    # labels that share no first word are two unrelated facts, not one quantity read twice
    unrelated = "ValueError: Config does not match.\nhost: t1v-n-0\nzone: us-east5-a\n"
    assert not any(kind == "comparison" for kind, _ in _kinds(unrelated))
    # the same value twice is no mismatch the values show
    same = "ValueError: Epochs do not match.\nepochs in state: 3\nepochs in config: 3\n"
    assert not any(kind == "comparison" for kind, _ in _kinds(same))


def test_two_counts_set_side_by_side_with_vs_are_named() -> None:
    text = "ValueError: Not enough record shards for every host: 3 shards vs 8 hosts.\n"
    assert ("comparison", ("shards", "hosts")) in _kinds(text)
    _, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion") and "`shards`, `hosts`" in fix
    # no error word: a progress note, not a refused check
    assert _kinds("step 10: 3 shards vs 8 hosts read so far") == []
    # one thing counted twice compares nothing to change
    assert not any(kind == "comparison" for kind, _ in _kinds("ValueError: 3 steps vs 4 steps."))


def test_a_feature_that_requires_a_value_given_names_it() -> None:
    text = "ValueError: Resuming from a checkpoint requires passing a run_name.\n"
    assert ("constraint", ("run_name",)) in _kinds(text)
    _, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion") and "`run_name`" in fix
    # an ordinary cue places it, ahead of a neighbour met on a shared word
    vote = weak_vote(text.splitlines())
    assert vote is not None and vote.category == "runtime_init_failure"
    assert weak_vote(["ValueError: Shuffling requires a larger buffer."]) is None
    # "a value" names nothing to give
    assert not any(
        kind == "constraint" for kind, _ in _kinds("ValueError: Padding requires specifying a value.")
    )


def test_a_boolean_setting_refused_with_is_names_the_other_value() -> None:
    text = "NotImplementedError: use_bias is True not supported for this kernel.\n"
    assert ("constraint", ("use_bias=False",)) in _kinds(text)
    # a plain word is no setting
    assert not any(kind == "constraint" for kind, _ in _kinds("ValueError: bias is True not supported."))


def test_a_feature_refused_in_one_mode_is_turned_off_there() -> None:
    text = "ValueError: During inference, dropout can't be used.\n"
    assert ("mode_refusal", ("dropout",)) in _kinds(text)
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("unsupported_op", "unsupported_op/message_suggestion")
    assert "Turn `dropout` off for that mode" in fix
    other = "ValueError: Gradient checkpointing cannot be used during export."
    assert ("mode_refusal", ("checkpointing",)) in _kinds(other)
    # an INFO line is no refusal, and a pronoun names no feature to turn off
    assert not any(
        kind == "mode_refusal" for kind, _ in _kinds("INFO: During warmup, caching can't be used.")
    )
    assert not any(kind == "mode_refusal" for kind, _ in _kinds("ValueError: it cannot be used here."))


def test_an_xpk_refusal_is_a_start_up_failure_with_xpk_remedies() -> None:
    text = (
        "[XPK] Starting workload create\n"
        "[XPK] train-7b is requesting 2 slice/slices of v6e-256, which is 128 VMs, but the cluster only "
        "contains 64 VMs of v6e-256. XPK will not create this workload.\n"
        "[XPK] XPK failed, error code 1\n"
    )
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/from_facts_xpk_refusal")
    assert "--num-slices" in fix and "is requesting 2 slice/slices" in fix
    # xpk's ordinary progress lines refuse nothing
    quiet = "[XPK] Starting workload create\n[XPK] Workload train-7b created on cluster v6e-big\n"
    assert ablated_verdict(quiet)[1] != "runtime_init_failure/from_facts_xpk_refusal"
    # the rules' signature makes the router send the refusal to diagnose, and not the progress lines
    assert classify_text(text).signature == "runtime_init_failure"
    assert not classify_text(quiet).has_error


def test_an_xpk_version_refusal_is_no_unsupported_feature() -> None:
    text = (
        "[XPK] Planned node pool version 1.30.5-gke.1014001 is not supported in valid version "
        "['1.32.2-gke.1182003']\n"
    )
    category, _, _ = ablated_verdict(text)
    assert category == "runtime_init_failure"
    # a feature as subject is still refused on the platform
    assert (
        ablated_verdict("ValueError: sparse_attention is not supported on TPU v4.\n")[0] == "unsupported_op"
    )
