"""Round diag102's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a hang the runtime puts down to the network of named hosts is answered with those
hosts' network (`collective_timeout/from_facts_hang_blamed_on_network`); a hang put down to workers running
different programs, or launching them in a different order, is answered with one program in one order on
every host (`collective_timeout/from_facts_hang_from_diverging_programs`); and the multislice rule for a hang
it cannot attribute leaves alone a digest that names its cause (docs/diagnose-accuracy.md, "Round
diag102")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed, diagnose_rules_alone

NETWORK_HANG = (
    "E0412 09:13:02.551204    812 hang_monitor.cc:88] Collective all-reduce.7 hang detected after 600s;"
    " the likely cause is a network issue between worker-3 and worker-12.\n"
)


def test_a_hang_put_down_to_the_network_checks_the_named_hosts_network() -> None:
    category, fix_rule, fix = ablated_verdict(NETWORK_HANG)
    assert (category, fix_rule) == (
        "collective_timeout",
        "collective_timeout/from_facts_hang_blamed_on_network",
    )
    assert "DCN" in fix and "firewall" in fix
    assert_fixed_by(NETWORK_HANG, "collective_timeout", "from_facts_hang_blamed_on_network", "checkpoint")


def test_network_words_without_a_hang_are_not_claimed() -> None:
    for text in (
        # a download failing on the network is no hang of a collective
        "OSError: could not fetch the tokenizer: network error (connection refused)\n",
        # a network issue named in progress output, nothing timed out
        "INFO: retrying the upload after a network problem, attempt 2 of 5\n",
    ):
        assert_not_claimed(text, "from_facts_hang_blamed_on_network")


DIVERGING_HANG = (
    "RuntimeError: DEADLINE_EXCEEDED: the collective timed out after 300s: workers 0-3 and 4-7"
    " ran different programs (HLO fingerprints differ)\n"
)
LAUNCH_ORDER_HANG = (
    "F0601 17:40:11.004113    77 runtime.cc:310] Hang in the cross-slice barrier: launch order of"
    " jit_train_step and jit_eval_step differs across hosts\n"
)


def test_a_hang_from_diverging_programs_asks_for_one_program_in_one_order() -> None:
    for text in (DIVERGING_HANG, LAUNCH_ORDER_HANG):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "collective_timeout",
            "collective_timeout/from_facts_hang_from_diverging_programs",
        ), text
        assert "same order" in fix and "process_index" in fix and "xla_dump_to" in fix
    sub_rule = "from_facts_hang_from_diverging_programs"
    assert_fixed_by(DIVERGING_HANG, "collective_timeout", sub_rule, "same program")


def test_different_programs_without_a_hang_are_not_claimed() -> None:
    for text in (
        # two programs compiled differently, nothing hangs or times out
        "WARNING: different modules were compiled for prefill and decode (2 HLO modules)\n",
        # a data loader order, not the launch order of programs
        "ValueError: inconsistent shard order in the dataset index\n",
    ):
        assert_not_claimed(text, "from_facts_hang_from_diverging_programs")


def test_the_unattributed_multislice_rule_leaves_a_digest_that_names_its_cause() -> None:
    named = (
        "Megascale detects a hang that is likely caused by a networking issue. Please examine the"
        " hosts below.\n    Workers with suspected networking issues:\n      slice-1-worker-4\n"
    )
    assert not diagnose_rules_alone(named).evidence.fix_rule.endswith("/megascale_hang")
    unattributed = "Megascale detects a hang but cannot determine the root cause. See the digest.\n"
    assert diagnose_rules_alone(unattributed).evidence.fix_rule == "collective_timeout/megascale_hang"
