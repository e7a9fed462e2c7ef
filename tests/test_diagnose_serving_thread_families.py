"""Families of wording from serving and training stacks' issue threads on TPU (round diag48).

Each case is another wording of a family the rules now read (not a corpus file's text): the Cloud Storage
FUSE CSI driver's mount errors at Pod start, an admission policy refusing a workload's priority class, a
dataset tensor the TPU worker cannot parse, a TensorFlow Addons custom op on the TPU worker, jax's
unspecified-sharding sentinel reaching a library built for another jax, a torch_xla release published
only as C++11-ABI wheels, and TPUEstimator's infeed/outfeed queue closing with "Bad hardware status" once the
TPU ran out of HBM. The assertions check the category, the sub-rule chosen and what the fix names, so a
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
            '  Warning  FailedMount  12s (x4 over 2m)  kubelet  MountVolume.SetUp failed for volume "data" : '
            "rpc error: code = Internal desc = the webhook failed to inject the sidecar container into the "
            "Pod spec",
            "runtime_init_failure",
            "gcsfuse_csi_sidecar_not_injected",
            "rollout restart",
        ),
        (
            'MountVolume.SetUp failed for volume "ckpt" : rpc error: code = Internal desc = failed to '
            "prepare storage service: rpc error: code = Internal desc = storage service manager failed to "
            "setup service: context deadline exceeded",
            "runtime_init_failure",
            "gcsfuse_csi_storage_service_internal_timeout",
            "tokenRequests",
        ),
        (
            'Error from server: admission webhook "validate.kyverno.svc-fail" denied the request: '
            "require-recognized-priority: 'validation error: [FORBIDDEN] Invalid priority class specified "
            '("critical"). Recognized priorities are: "batch", "low".\'',
            "runtime_init_failure",
            "admission_priority_class_not_recognised",
            '"critical"',
        ),
        (
            "InternalError: Failed copying input tensor from /job:localhost/replica:0/task:0/device:CPU:0 to "
            "/job:worker/replica:0/task:0/device:CPU:0 in order to run DatasetCardinality: Unable to parse "
            "tensor proto",
            "shape_dtype_error",
            "tpu_input_tensor_dtype_unparsable",
            "DatasetCardinality",
        ),
        (
            "tensorflow.python.framework.errors_impl.NotFoundError: Op type not registered "
            "'Addons>GatherTree' in binary running on t1v-n-2b0e-w-0.",
            "unsupported_op",
            "tf_addons_custom_op_on_tpu_worker",
            "GatherTree",
        ),
        (
            "jax:    0.4.20\njaxlib: 0.4.20\nAttributeError: 'UnspecifiedValue' object has no attribute "
            "'memory_kind'",
            "version_mismatch",
            "jax_unspecified_sharding_sentinel",
            "jax 0.4.20",
        ),
        (
            "ERROR: Could not find a version that satisfies the requirement torch_xla==2.7.0 (from versions: "
            "2.3.0, 2.4.0, 2.5.1)\nERROR: No matching distribution found for torch_xla==2.7.0",
            "version_mismatch",
            "torch_xla_cxx11_wheel_not_on_pypi",
            "r2.7",
        ),
        (
            "I0613 20:15:19.944839 140 error_handling.py:70] Error recorded from infeed: "
            "Bad hardware status: 0x1\n\t [[node input_pipeline_task0/while/InfeedQueue/enqueue/3 "
            "(defined at /usr/local/lib/python3.5/dist-packages/tensorflow_estimator/python/estimator/"
            "estimator.py:1112) ]]",
            "hbm_oom",
            "tpu_estimator_queue_bad_hardware_status",
            "train_batch_size",
        ),
    ],
)
def test_family_wordings_get_their_sub_rule(text: str, category: str, sub_rule: str, named: str) -> None:
    assert_fixed_by(text, category, sub_rule, named)


def test_a_permission_refused_storage_service_is_not_read_as_the_token_audience() -> None:
    """The audience remedy is for the driver's internal error; an Unauthenticated one is a credential."""
    crash = _diagnose(
        'MountVolume.SetUp failed for volume "x" : rpc error: code = Unauthenticated desc = failed to '
        "prepare storage service: storage service manager failed to setup service: timed out waiting for "
        "the condition"
    )
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule != "runtime_init_failure/gcsfuse_csi_storage_service_internal_timeout"


def test_a_core_op_missing_from_the_worker_stays_a_version_skew() -> None:
    """Only an Addons> op is a custom op the worker never has; a core op missing there is a release skew."""
    crash = _diagnose(
        "NotFoundError: Op type not registered 'ExperimentalRebatchDataset' in binary running on "
        "n-23c14aca-w-0."
    )
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule != "unsupported_op/tf_addons_custom_op_on_tpu_worker"


def test_an_older_torch_xla_not_found_keeps_the_generic_index_remedy() -> None:
    """The C++11-ABI remedy is for 2.6 and later; an older pin keeps the release-page remedy."""
    crash = _diagnose("ERROR: No matching distribution found for torch_xla[tpu]==2.1.0")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule != "version_mismatch/torch_xla_cxx11_wheel_not_on_pypi"
