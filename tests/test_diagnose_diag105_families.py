"""Round diag105's general mechanism, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a per-chip multiprocess launcher refused under SPMD is answered by running one process per
host and sharding instead of spawning (`unsupported_op/from_facts_multiprocess_launch_under_spmd`)
(docs/diagnose-accuracy.md, "Round diag105")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed, library_trace

SUB_RULE = "from_facts_multiprocess_launch_under_spmd"

LAUNCH_REFUSALS = (
    library_trace("NotImplementedError: spawn_all_chips does not support SPMD mode yet"),
    library_trace("NotImplementedError: multiprocess launch is not supported under SPMD"),
    library_trace("NotImplementedError: SPMD does not support the per-device launcher"),
)


def test_a_multiprocess_launcher_refused_under_spmd_runs_one_process_per_host() -> None:
    for text in LAUNCH_REFUSALS:
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == ("unsupported_op", f"unsupported_op/{SUB_RULE}"), text
        assert "single process" in fix and "mark_sharding" in fix
        assert_fixed_by(text, "unsupported_op", SUB_RULE, "use_spmd")


def test_spmd_or_launch_words_without_the_refusal_of_both_are_not_claimed() -> None:
    for text in (
        # a launcher refused for another reason than SPMD
        library_trace("NotImplementedError: spawn does not support start_method='forkserver' on this host"),
        # SPMD refused something that is no launcher
        library_trace("NotImplementedError: SPMD does not support sparse tensors in mark_sharding"),
        # both words in progress output, with no refusal
        "INFO: launching 8 processes; SPMD partitioner enabled for the step function\n",
    ):
        assert_not_claimed(text, SUB_RULE)
