"""The message-family tier: cue files joined to the base cues, extra fallbacks per family, wider suggestions.

Each case is one machine-written wording of a family (not a corpus file's text); the assertions check the
category the cues give, the sub-rule the fallbacks choose and what the suggestion extraction keeps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_cues import CUES_DIR, load_cues, weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, suggestion_addendum
from tpu_runtime.diagnose.crashlog import FALLBACK_PREFIX, diagnose_log, load_rules


def test_family_cues_join_the_base_categories() -> None:
    config = load_cues()
    labels = {cue.label for group in config.categories for cue in group.cues}
    assert "the kernel's OOM killer ended a process" in labels  # from crash_cues/message_families.yaml
    assert "a deadline, heartbeat or barrier in a multi-process job" in labels  # from crash_cues.yaml
    assert len({group.category for group in config.categories}) == len(config.categories)
    without = load_cues(families=None)
    assert sum(len(g.cues) for g in without.categories) < sum(len(g.cues) for g in config.categories)
    assert any(CUES_DIR.glob("*.yaml"))


@pytest.mark.parametrize(
    ("lines", "category"),
    [
        (["[91.2] Out of memory: Killed process 4101 (python) total-vm:79905000kB"], "host_oom"),
        (
            ["UnimplementedError: File system scheme '[local]' not implemented (file: 'x')"],
            "runtime_init_failure",
        ),
        (
            [
                "NotFoundError: 'Foo' is neither a type of a primitive operation nor a name of a function "
                "registered in binary running on n-1-w-0."
            ],
            "version_mismatch",
        ),
        (["RuntimeError: Could not run 'foo::bar' with arguments from the 'XLA' backend."], "unsupported_op"),
        (["pt-xla-profiler: CompileTime too frequent: 40 counts during 12 steps"], "recompilation"),
        (["XLA compilation requires that shape arguments be fixed."], "xla_compile_error"),
        (["Some_Op is not supported by XLA on this device."], "xla_compile_error"),
        (["Megascale detects a hang that is likely caused by slow hosts."], "collective_timeout"),
        (["A module that was compiled using NumPy 1.x cannot be run in"], "version_mismatch"),
        (
            ["RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf"],
            "version_mismatch",
        ),
        (["TypeError: Descriptors cannot be created directly."], "version_mismatch"),
        (["W0101 train_step was compiled again because an argument's shape changed"], "recompilation"),
    ],
)
def test_family_cues_give_the_category(lines: list[str], category: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == category


def test_source_paths_are_not_evidence_and_close_scores_still_decide() -> None:
    # "compiler/xla/..." is where the message was raised; unmasked, the XLA cue ties the rendezvous one.
    line = (
        "E0621 06:57:22.603 1 tf_logging.cc:11] tensorflow/compiler/xla/xla_client/mesh_service.cc:294 : "
        "Failed to meet rendezvous 'init': Socket closed (14)"
    )
    vote = weak_vote([line])
    assert vote is not None and vote.category == "collective_timeout"
    assert vote.runner_up != "xla_compile_error"


def test_family_fallbacks_come_before_the_category_fallbacks() -> None:
    rule = next(r for r in load_rules() if r.category == "runtime_init_failure")
    ids = [sub.id for sub in rule.fixes]
    assert ids.index("from_facts_local_files") < ids.index("from_facts_tensorflow_tpu")
    specific = [i for i, sub in enumerate(ids) if not sub.startswith(FALLBACK_PREFIX)]
    assert max(specific) < ids.index("from_facts_local_files")


def test_suggestions_read_purpose_clauses_and_quoted_commands() -> None:
    purpose = [
        "ValueError: Cannot lower pallas_call on tpu. To use Pallas on TPU, install jaxlib TPU and libtpu."
    ]
    assert [s.text for s in find_suggestions(purpose)] == ["install jaxlib TPU and libtpu."]
    busy = ['E0 libtpu.so already in use by another process. Run "$ sudo lsof -w /dev/accel0" to find it.']
    (found,) = find_suggestions(busy)
    assert found.named == ("sudo lsof -w /dev/accel0",)
    xla_hint = [
        "F0101 00:00:00.0 1 parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: --xla_tpu_foo=1",
        "Perhaps you meant to specify these on the TF_XLA_FLAGS envvar?",
    ]
    assert find_suggestions(xla_hint) == []


def test_a_sentence_glued_to_the_one_before_still_gives_its_advice() -> None:
    # Two adjacent string literals without a space: "...environment.Please wrap ..." (torchax/tensor.py).
    glued = ["AssertionError: Arrays work only within the demo environment.Please call demo.enable() first."]
    assert [s.text for s in find_suggestions(glued)] == ["Please call demo.enable() first."]
    # A dotted name is not a sentence end: "torch.Tensor" does not start advice.
    assert find_suggestions(["TypeError: expected a jax.Array, got torch.Tensor instead"]) == []


def test_cue_files_are_in_the_package_data() -> None:
    assert CUES_DIR.parent.name == "data" and Path(CUES_DIR, "message_families.yaml").is_file()


def test_a_one_line_message_is_read_whole_for_its_advice() -> None:
    # A pasted message without an error word still states its remedy after a comma ("you can fix this by").
    line = "Needs a bounded list. Loops without max_steps set, you can fix this by setting max_steps."
    assert [s.named for s in find_suggestions([line])] == [("max_steps",)]
    assert find_suggestions(["step 1 loss 2.0", "step 2 loss 1.9", "step 3 loss 1.8", line]) == []


def test_a_cause_specific_fix_keeps_the_advice_the_message_states() -> None:
    # An invented HBM OOM whose allocator line also names a knob of its own: the sub-rule for the cause
    # wins, and the message's own remedy is added rather than dropped.
    log = [
        "RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 20.00G of 16.00G hbm.",
        "Consider setting my_allocator_knob=0.5 to reduce fragmentation.",
    ]
    crash = diagnose_log("\n".join(log), "run.log", load_rules())
    assert crash.category == "hbm_oom"
    assert "/" in crash.evidence.fix_rule and not crash.evidence.fix_rule.endswith("/message_suggestion")
    assert "my_allocator_knob=0.5" in crash.fix
    assert suggestion_addendum("set my_allocator_knob=0.5", find_suggestions(log)) == ""


def test_advice_that_names_a_limit_in_words_counts() -> None:
    # "a longer ... timeout" names the setting to change even without a flag or variable name.
    error = "DEADLINE_EXCEEDED: Barrier timed out."
    (found,) = find_suggestions([error, "Consider setting a longer registration timeout if needed."])
    assert found.named == ("registration timeout",)
    assert find_suggestions([error, "Consider waiting a little longer."]) == []


def test_a_module_that_merely_failed_to_load_is_no_release_skew() -> None:
    # Near the NumPy/protobuf cue but naming no other release: no version_mismatch vote from it.
    vote = weak_vote(["RuntimeError: module compiled with debug symbols cannot be loaded"])
    assert vote is None or vote.category != "version_mismatch"
