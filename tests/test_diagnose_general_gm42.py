"""General mechanisms built from dev fold A's ablated failures (docs/diagnose-accuracy.md, "General
mechanisms"): the configuration checks of crash_cues/configuration_checks.yaml. Wordings written for these
tests, each family with a nearby wording it must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote

INIT = "runtime_init_failure"
SETTING_AT_ONE_VALUE = 'a feature that needs a named setting at one value ("requires some_setting=False")'

# A feature that works under one value of a named setting only.
SETTING_PLACED = [
    "ValueError: Ring attention requires shard_heads=False when the sequence axis is inferred.",
    "ValueError: --speculative-draft requires --num-draft-tokens > 0; got num_draft_tokens=0.",
    "RuntimeError: Paged prefill only works with use_paged_cache=True",
    "NotImplementedError: Offloaded optimizer state needs offload_mode==host on this trainer.",
]

# Nearby wordings: a package release required, a requirement with no named setting, a setting named
# without a value it must take, a kernel's block size (a shape constraint).
SETTING_NOT_CLAIMED = [
    "ImportError: This trainer requires optax>=0.2.1, but 0.1.7 is installed.",
    "ValueError: Ring attention requires an even number of heads.",
    "ValueError: shard_heads=True was given twice.",
    "ValueError: This kernel requires block_kv=512 on the chip it runs on.",
]


@pytest.mark.parametrize("line", SETTING_PLACED)
def test_a_feature_needing_a_setting_value_is_a_start_up_refusal(line: str) -> None:
    vote = weak_vote([line])
    assert vote is not None and vote.category == INIT, vote
    assert SETTING_AT_ONE_VALUE in vote.labels, vote.labels


@pytest.mark.parametrize("line", SETTING_NOT_CLAIMED)
def test_a_requirement_without_a_setting_value_is_not_claimed(line: str) -> None:
    vote = weak_vote([line])
    assert vote is None or SETTING_AT_ONE_VALUE not in vote.labels, vote


def test_a_setting_value_outvotes_the_refusal_of_a_feature() -> None:
    # "... is not supported." alone is an unsupported op; naming the setting value the feature needs makes
    # the message a refusal of the configuration
    refused = "ValueError: Grouped GEMM through the XLA path is not supported."
    alone = weak_vote([refused])
    assert alone is not None and alone.category == "unsupported_op", alone
    vote = weak_vote([refused[:-1] + "; it requires gmm_backend=pallas."])
    assert vote is not None and vote.category == INIT, vote
