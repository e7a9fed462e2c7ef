"""Families of wording from serving stacks, cluster managers and TensorFlow/Keras on TPU (round diag35).

Each case is another wording of a family the rules now read (not a corpus file's text): a kernel refusing the
TPU generation, a framework refusing a named feature, settings refused together, a request no node can place,
a Cloud API refusal, a missing TPU device node, a size a kernel mode must split, a Keras API or step under a
tf.distribute strategy. The assertions check the category, the sub-rule chosen and what the fix names, so a
rule that only matched the collected log's exact text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by
from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "NotImplementedError: TPU version must be 5 or higher.",
            "unsupported_op",
            "tpu_generation_below_minimum",
            "TPU v5 or newer",
        ),
        (
            "ValueError: this kernel requires TPU v4 or newer",
            "unsupported_op",
            "tpu_generation_below_minimum",
            "TPU v4 or newer",
        ),
        (
            "NotImplementedError: Unsupported TPU generation: 3",
            "unsupported_op",
            "tpu_generation_without_defaults",
            "TPU v3",
        ),
        (
            "ValueError: JAX does not support logprobs for prompt tokens.",
            "unsupported_op",
            "backend_refuses_named_feature",
            "logprobs",
        ),
        (
            "NotImplementedError: `evaluate_generator` is not supported for models compiled with "
            "tf.distribute.Strategy.",
            "unsupported_op",
            "keras_api_under_distribution_strategy",
            "tf.data.Dataset",
        ),
        (
            "ValueError: Speculative decoding is not supported with pipeline parallelism",
            "runtime_init_failure",
            "settings_not_supported_together",
            "--pipeline-parallel-size 1",
        ),
        (
            "ValueError: prefix_caching is not supported with sliding_window attention.",
            "runtime_init_failure",
            "settings_not_supported_together",
            "sliding_window attention",
        ),
        (
            "Warning  FailedScheduling  default-scheduler  0/4 nodes are available: "
            "4 Insufficient google.com/tpu.",
            "runtime_init_failure",
            "unplaceable_resource_request",
            "google.com/tpu",
        ),
        (
            "(autoscaler) No available node types can fulfill resource request {'TPU': 4.0, 'CPU': 1.0}. "
            "Add suitable node types to this cluster to resolve this issue.",
            "runtime_init_failure",
            "unplaceable_resource_request",
            "{'TPU': 4.0, 'CPU': 1.0}",
        ),
        (
            "ERROR: (gcloud.alpha.compute.tpus.queued-resources.create) PERMISSION_DENIED: Permission "
            "'tpu.nodes.create' denied on resource",
            "runtime_init_failure",
            "cloud_api_refused_request",
            "gcloud.alpha.compute.tpus.queued-resources.create",
        ),
        (
            "UNKNOWN: TPU initialization failed: open(/dev/vfio/0): No such file or directory",
            "runtime_init_failure",
            "device_node_missing",
            "privileged: true",
        ),
        (
            "ValueError: batch size must be a multiple of 8 when sharding_mode is 'data'",
            "shape_dtype_error",
            "size_must_split_for_mode",
            "sharding_mode='data'",
        ),
        (
            "ResourceExhaustedError: 9 root error(s) found.\n  (0) Resource exhausted: {{function_node "
            "__inference_test_function_8812}} Compilation failure: Ran out of memory in memory space hbm. "
            "Used 40.00G of 15.48G hbm. Exceeded hbm capacity by 24.52G.",
            "hbm_oom",
            "keras_replicated_step_over_capacity",
            "test step",
        ),
    ],
)
def test_family_wordings_get_their_sub_rule(text: str, category: str, sub_rule: str, named: str) -> None:
    assert_fixed_by(text + "\n", category, sub_rule, named)


def test_an_environment_variable_value_is_not_read_as_a_setting_refused_together() -> None:
    """`X=1 is not supported with ...` belongs to the environment-variable rule: "1" is no setting to drop."""
    crash = _diagnose(
        "ValueError: TPU_MULTIPROCESS_DP=1 is not supported with attention DP (enable_dp_attention). "
        "Set TPU_MULTIPROCESS_DP=0 to use single-process SPMD DP.\n"
    )
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule != "runtime_init_failure/settings_not_supported_together"
    assert "turn 1 off" not in (crash.fix or "")


def test_a_busy_device_node_is_not_read_as_a_missing_one() -> None:
    """Only "No such file or directory" means the node is absent; a busy node keeps the holder's fix."""
    crash = _diagnose("UNKNOWN: TPU initialization failed: open(/dev/vfio/0): Device or resource busy\n")
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule != "runtime_init_failure/device_node_missing"
