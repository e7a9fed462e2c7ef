"""Families of wording from TPU serving engines and checkpoint/data libraries (round diag39).

Each case is another wording of a family the rules now read (not a corpus file's text): a feature that runs
only with an environment switch on, a kernel enabled without the setting it needs, a size below the minimum
another setting implies, a ratio refused at or below zero, a static memory fraction that leaves nothing for
the KV cache, a detokenizer table evicting live requests, a serving compile outside the precompiled buckets,
a checkpoint restored onto other devices, a kernel axis with no sublane-aligned divisor, a removed API raised
with its replacement, and Grain's loader wanting shard options. The assertions check the category, the
sub-rule chosen and what the fix names, so a rule that only matched the collected log's exact text fails.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by
from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "ValueError: Must run Expert Parallelism with NEW_MODEL_DESIGN enabled. Please set "
            "NEW_MODEL_DESIGN=1",
            "runtime_init_failure",
            "required_env_for_feature",
            "NEW_MODEL_DESIGN=1",
        ),
        (
            "ValueError: You should set KV_QUANT_BLOCK to enable the int8 KV cache. Please set the value.",
            "runtime_init_failure",
            "message_suggestion",
            "KV_QUANT_BLOCK",
        ),
        (
            "ValueError: max_num_tokens=64 is below the chunked-prefill minimum 128. Increase "
            "--max-num-tokens.",
            "runtime_init_failure",
            "size_below_implied_minimum",
            "--max-num-tokens",
        ),
        (
            "ValueError: swa_full_tokens_ratio=0 <= 0 is invalid for sliding-window models; set "
            "--swa-full-tokens-ratio > 0 (default 0.8).",
            "runtime_init_failure",
            "message_suggestion",
            "--swa-full-tokens-ratio",
        ),
        (
            "[2026-01-02 03:04:05] RuntimeError: Not enough memory. Please try to increase "
            "--mem-fraction-static.",
            "hbm_oom",
            "message_suggestion",
            "--mem-fraction-static",
        ),
        (
            "RuntimeError: Decode status not found for request abc. It may be due to the request being "
            "evicted "
            "from the decode status due to memory pressure. Please increase the maximum number of "
            "requests by "
            "setting the SGLANG_DETOKENIZER_MAX_STATES environment variable to a bigger value.",
            "host_oom",
            "message_suggestion",
            "SGLANG_DETOKENIZER_MAX_STATES",
        ),
        (
            "RuntimeError: Cache miss occurred 12 times, please check if the precompile logic covers the "
            "current "
            "scenario",
            "recompilation",
            "serving_precompile_cache_miss",
            "--precompile-token-paddings",
        ),
        (
            "ValueError: Topology mismatch detected. The checkpoint was saved with a different topology "
            "than the "
            "current one. Please provide a target tree with the desired topology to restore.",
            "shape_dtype_error",
            "checkpoint_restore_other_topology",
            "ArrayRestoreArgs",
        ),
        (
            "ValueError: The available devices are different from the devices used to save the "
            "checkpoint.  Please "
            "restore checkpoint by passing new shardings for target devices. Original=Mesh('fsdp': 16), "
            "current "
            "available=[CpuDevice(id=0)]",
            "shape_dtype_error",
            "checkpoint_restore_other_topology",
            "Mesh('fsdp': 16)",
        ),
        (
            "ValueError: No divisor of pipeline axis size 72 is both <= 64 and divisible by 32 (dtype=int8). "
            "Consider increasing n_tile and/or padding your input to be suble-aligned (i.e. a multiple "
            "of 32).",
            "shape_dtype_error",
            "message_suggestion",
            "n_tile",
        ),
        (
            "TypeError: jax.experimental.maps.xmap has been deprecated. Please use jax.shard_map instead.",
            "version_mismatch",
            "message_suggestion",
            "jax.shard_map",
        ),
        (
            "ValueError: No shard options were provided to the DataLoader. Please pass shard options to the "
            "DataLoader.",
            "version_mismatch",
            "grain_dataloader_shard_options",
            "ShardByJaxProcess",
        ),
    ],
)
def test_family_wording(text: str, category: str, sub_rule: str, named: str) -> None:
    assert_fixed_by(text, category, sub_rule, named)


def test_restore_on_the_saved_devices_is_not_a_topology_error() -> None:
    """A runtime that cannot build its mesh ("Topology mismatch" alone) stays a start-up failure: only the
    checkpoint's wording of a restore on other devices moves the log to the checkpoint sub-rule."""
    crash = _diagnose("RuntimeError: MESH_BUILD_FAIL: Topology mismatch: expected 2x2x1, got 2x2x2")
    assert crash.category == "runtime_init_failure", crash.category
    assert crash.evidence.fix_rule != "shape_dtype_error/checkpoint_restore_other_topology"


def test_deprecation_warning_is_not_a_version_error() -> None:
    """A deprecation warning that names its replacement is not the raised removal the pattern reads."""
    crash = _diagnose(
        "UserWarning: jax.tree_map has been deprecated. Please use jax.tree.map instead.\nTraining finished."
    )
    assert crash.category != "version_mismatch", crash.category
