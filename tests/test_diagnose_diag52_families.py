"""Families of wording that round diag52 added to the rules.

One family: TensorFlow finding no TPU_SYSTEM device ("No matching devices found for
'/device:TPU_SYSTEM:0'", or "TPUs not found in the cluster"), whose fix now also names the case where the
tpu-runtime service serves the TPU and another program opened the chips on a worker (a setup step
that imported tensorflow there). Each case is
another wording of the family (another op name and task, the cluster wording); the nearby wording it must not
claim is the same message for a GPU device, which no TPU runtime is involved in. The assertions check the
category, the sub-rule chosen and what the fix names, so a rule matching only the collected log's exact text
would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose

_RULE = "runtime_init_failure/tensorflow_tpu_system_missing"


@pytest.mark.parametrize(
    "text",
    [
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: No matching devices found for "
        "'/job:worker/replica:0/task:0/device:TPU_SYSTEM:0' [Op:__inference__tpu_init_fn_4]",
        'Traceback (most recent call last):\n  File "train.py", line 41, in <module>\n'
        "    tf.tpu.experimental.initialize_tpu_system(resolver)\n"
        "ValueError: TPUs not found in the cluster. Failed in initialization of TPU system.",
    ],
)
def test_no_tpu_system_device_names_the_runtime_service(text: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "runtime_init_failure", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == _RULE
    assert "import tensorflow" in crash.fix
    assert "restart tpu-runtime" in crash.fix
    assert "TPUClusterResolver(tpu='local')" in crash.fix


def test_a_gpu_device_missing_is_not_read_as_the_tpu_runtime() -> None:
    """The same TensorFlow message for a GPU has nothing to do with the TPU runtime service."""
    crash = _diagnose(
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: No matching devices found for "
        "'/device:GPU:0' [Op:MatMul]"
    )
    assert crash.evidence.fix_rule != _RULE
    assert "tpu-runtime" not in crash.fix
