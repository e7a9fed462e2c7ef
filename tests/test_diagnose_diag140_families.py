"""Round diag140's crash-rule fix and weak cue, with wordings written here (not the corpus files) and nearby
wordings they must not claim: XLA:TPU's early abort of a compile whose estimate cannot fit the device's
HBM (`crash_rules/hbm_oom.yaml`, `crash_cues/compiler_checks.yaml`; docs/diagnose-accuracy.md, "Round
diag140")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote

FLAG = "--xla_tpu_impure_oom_fast_exit_threshold=-1"


def compile_step(message: str) -> str:
    """A jitted training step whose TPU compile fails (an invented script)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 88, in <module>\n'
        "    state, metrics = train_step(state, batch)\n"
        f"jax.errors.JaxRuntimeError: {message}\n"
    )


EARLY_ABORT = (
    "RESOURCE_EXHAUSTED: Compilation failure: Aborting compilation early because it's unlikely to have enough"
    " memory. Requires 612.50G, has 15.75G available. If more detailed logging is desired, set " + FLAG
)


def test_an_early_abort_names_the_estimate_and_the_flag_that_prints_the_listing() -> None:
    crash = assert_fixed_by(compile_step(EARLY_ABORT), "hbm_oom", "early_abort_estimate", FLAG)
    assert "LIBTPU_INIT_ARGS" in (crash.fix or ""), crash.fix
    assert "612.50 GiB" in (crash.fix or ""), crash.fix


def test_an_early_abort_without_the_flag_or_a_plain_report_is_not_claimed() -> None:
    # The older wording names no flag, and the full report after the compile ran on has its allocation
    # listing: neither is this sub-rule's case.
    for message in (
        "RESOURCE_EXHAUSTED: Compilation failure: Aborting compilation early because it's unlikely to have"
        " enough memory. Requires 3.47E, has 14.49G available.",
        "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used"
        " 61.20G of 15.75G hbm. Exceeded hbm capacity by 45.45G.",
    ):
        assert_not_claimed(compile_step(message), "early_abort_estimate")


def test_the_weak_cues_read_the_early_abort_as_device_memory() -> None:
    # The line names no HBM, TPU or device word the generic out-of-memory cues need ("xla_tpu" is one token).
    vote = weak_vote(compile_step(EARLY_ABORT).splitlines())
    assert vote is not None and vote.category == "hbm_oom", vote


def test_the_early_abort_cue_leaves_other_aborts_alone() -> None:
    # A compile aborted for another reason, in an unrelated tool, is no memory report.
    vote = weak_vote(["error: Aborting compilation early because the module has no entry computation"])
    assert vote is None or vote.category != "hbm_oom", vote
