"""Families of wording that round diag69 added to the rules: tpu-inference's serving checks.

tpu-inference (https://github.com/vllm-project/tpu-inference) refuses a tensor-parallel size that the KV
heads it replicates do not divide (`tpuinf_tp_size_vs_kv_heads`), a VLLM_RAY_BUNDLE_INDICES list that names a
bundle twice (`ray_bundle_indices_duplicates`) and an engine started on a Ray node without the accelerator
(`ray_current_node_without_device`).

Each case is another wording of its family (other values, another device, under another prefix),
and each family has a nearby wording it must not claim, so a rule matching only a collected log's text would
fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_ENGINE = "(EngineCore_DP0 pid=912) ERROR 09-01 08:00:00 [core.py:708] "


def test_a_tensor_parallel_size_the_kv_heads_do_not_divide() -> None:
    crash = assert_fixed_by(
        _ENGINE
        + 'File "tpu_inference/layers/common/cp_attention.py", line 183, in _attention\n'
        + _ENGINE
        + "ValueError: tp_size 4 must be divisible by num_kv_heads 3",
        "runtime_init_failure",
        "tpuinf_tp_size_vs_kv_heads",
        "--tensor-parallel-size",
    )
    assert "4 shards, 3 KV" in (crash.fix or "")


def test_kv_heads_that_the_tensor_parallel_size_must_divide_is_not_the_replication_check() -> None:
    assert_not_claimed(
        "ValueError: num_kv_heads 6 must be divisible by tp_size 4",
        "tpuinf_tp_size_vs_kv_heads",
    )


def test_bundle_indices_with_a_repeated_bundle() -> None:
    assert_fixed_by(
        "(RayWorkerWrapper pid=4410) AssertionError: VLLM_RAY_BUNDLE_INDICES cannot have duplicate values, "
        "but got bundle_indices=[2, 2, 3, 4]",
        "runtime_init_failure",
        "ray_bundle_indices_duplicates",
        "VLLM_RAY_BUNDLE_INDICES",
    )


def test_bundle_indices_only_printed_are_not_claimed() -> None:
    assert_not_claimed(
        "INFO 09-01 08:00:00 [ray_distributed_executor.py:260] VLLM_RAY_BUNDLE_INDICES=0,1,2,3 set; "
        "worker bundles pinned",
        "ray_bundle_indices_duplicates",
    )


def test_a_ray_node_without_the_accelerator() -> None:
    crash = assert_fixed_by(
        "ValueError: Current node has no GPU available. current_node_resource={'CPU': 4.0}. vLLM engine "
        "cannot start without GPU. Make sure you have at least 1 GPU available in a node "
        "current_node_id='ab12' current_ip='10.0.0.3'.",
        "runtime_init_failure",
        "ray_current_node_without_device",
        "ray start",
    )
    assert "GPU accelerator" in (crash.fix or "")


def test_the_autoscaler_unable_to_fit_a_tpu_request_is_not_the_node_check() -> None:
    assert_not_claimed(
        "(autoscaler) Error: No available node types can fulfill resource request {'TPU': 8.0}. "
        "Add suitable node types to this cluster to resolve this issue.",
        "ray_current_node_without_device",
    )
