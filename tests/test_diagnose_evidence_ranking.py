"""Sub-rules that choose among the remedies of one cause by this log's evidence, and the optional template
segments that let one sub-rule quote evidence only some logs print.

Each fragment is worded as its upstream source raises it (values made up): TensorFlow's TPU file-system
check and cluster resolver, the XRT computation client of older torch_xla, TensorFlow's and jaxlib's TPU
library loaders (tpu_library_init_fns.inc / tpu_executor_init_fns.inc), XLA's SMEM and HBM out-of-memory
reports in the short form serving engines print, Pallas' lowering check and XLA's and/or shape check.
"""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_facts import render_template
from tpu_runtime.diagnose.crashlog import diagnose_log


def test_optional_segment_kept_only_with_its_facts() -> None:
    template = "Move the files[[ ({path})]] to a bucket."
    assert render_template(template, {"path": "data/x"}) == "Move the files (data/x) to a bucket."
    assert render_template(template, {}) == "Move the files to a bucket."
    # a placeholder outside any optional segment still makes the whole template unusable
    assert render_template("Set {size}[[ and {other}]].", {"other": 1}) is None


@pytest.mark.parametrize(
    ("text", "category", "fix_rule", "must_name"),
    [
        (
            "Error recorded from training_loop: File system scheme '[local]' not implemented (file: "
            "'run7/model.ckpt-0_temp')\n",
            "runtime_init_failure",
            "runtime_init_failure/tpu_host_cannot_read_local_files",
            ["gs://", "run7/model.ckpt-0_temp"],
        ),
        (
            "UnimplementedError: File system scheme '[local]' not implemented\n",
            "runtime_init_failure",
            "runtime_init_failure/tpu_host_cannot_read_local_files",
            ["gs://"],
        ),
        (
            'Error recorded from training_loop: Could not interpret "10.1.2.3:8470,grpc://10.1.2.4:8470" as '
            "a host-port pair.\n",
            "runtime_init_failure",
            "runtime_init_failure/tensorflow_pod_addresses",
            ["--tpu", "10.1.2.3:8470,grpc://10.1.2.4:8470"],
        ),
        (
            "RuntimeError: tensorflow/compiler/xla/xla_client/xrt_computation_client.cc:1403 : Check failed: "
            "parsed_device.id <= topology_proto->num_tpu_devices_per_task() (7 vs. 4)\n",
            "runtime_init_failure",
            "runtime_init_failure/xrt_device_count",
            ["TPU_NUM_DEVICES=4", "device 7"],
        ),
        (
            "TPU_LIBRARY_PATH=/dev/null\n"
            "F statusor.cc:33] Attempting to fetch value instead of handling error INVALID_ARGUMENT: "
            "TpuPlatform is not available.\n",
            "runtime_init_failure",
            "runtime_init_failure/tpu_platform_not_loaded",
            ["TPU_LIBRARY_PATH", "/dev/null"],
        ),
        (
            "ValueError: Cannot lower pallas_call on platform: tpu. To use Pallas on TPU, install jaxlib TPU "
            "and libtpu.\n",
            "runtime_init_failure",
            "runtime_init_failure/pallas_tpu_lowering_import",
            ["absl-py", "tpu_custom_call"],
        ),
        (
            "ValueError: Cannot lower pallas_call on platform: cpu. To use Pallas on TPU, install jaxlib TPU "
            "and libtpu.\n",
            "mosaic_compile_error",
            "mosaic_compile_error/cpu_lowering_needs_interpret",
            ["interpret=True"],
        ),
        (
            "F0000 debug_macros.h:20] Non-OK-status: status.status() status: INVALID_ARGUMENT: Expected pred "
            "or integral type in argument to and/or operation; got BF16.\n",
            "shape_dtype_error",
            "shape_dtype_error/logical_op_on_float",
            ["BF16", ".bool()"],
        ),
    ],
)
def test_form_goes_to_the_sub_rule_naming_its_evidence(
    text: str, category: str, fix_rule: str, must_name: list[str]
) -> None:
    crash = diagnose_log(text, "fragment.log")
    assert crash.category == category, crash.evidence
    assert crash.evidence.fix_rule == fix_rule, crash.fix
    for word in must_name:
        assert word in crash.fix, (word, crash.fix)


def test_missing_libtpu_function_ranked_by_the_loader_that_asked() -> None:
    """TensorFlow's own loader asking means a TensorFlow package loaded libtpu; jaxlib's bundled copy of the
    same loader (external/org_tensorflow) means jax and libtpu disagree."""
    tensorflow = diagnose_log(
        "F ./tensorflow/core/tpu/tpu_library_init_fns.inc:98] TpuEmbeddingEngine_Foo not available in this "
        "library.\nAborted (core dumped)\n",
        "tf.log",
    )
    jaxlib = diagnose_log(
        "F external/org_tensorflow/tensorflow/core/tpu/tpu_executor_init_fns.inc:110] "
        "TpuTransferManager_Foo not available in this library.\nAborted (core dumped)\n",
        "jax.log",
    )
    assert tensorflow.evidence.fix_rule == "version_mismatch/libtpu_lacks_function_tensorflow_loader"
    assert "tensorflow-cpu" in tensorflow.fix
    assert jaxlib.evidence.fix_rule == "version_mismatch/libtpu_lacks_function"
    assert "jax[tpu]" in jaxlib.fix


def test_smem_short_form_read_and_ranked_by_the_serving_engine_evidence() -> None:
    bare = diagnose_log("Ran out of memory in memory space smem. Used 1.10M of 1.00M (+99.0K)\n", "a.log")
    served = diagnose_log(
        "(EngineCore pid=12) INFO tpu_runner.py:90] max_model_len=32768 block_size=16\n"
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space smem. Used "
        "1.10M of 1.00M (+99.0K)\n",
        "b.log",
    )
    assert bare.category == served.category == "vmem_oom"
    assert bare.facts["used_bytes"] > bare.facts["capacity_bytes"]
    assert bare.evidence.fix_rule == "vmem_oom/smem"
    assert served.evidence.fix_rule == "vmem_oom/smem_paged_attention"
    for crash in (bare, served):
        assert "--block-size" in crash.fix and "1.10 MiB" in crash.fix


@pytest.mark.parametrize(
    ("used", "fix_rule", "must_name"),
    [
        ("15.52G", "hbm_oom/near_capacity_sized_pool", "gpu-memory-utilization"),
        ("17.90G", "hbm_oom/near_capacity", "batch size"),
    ],
)
def test_hbm_overshoot_size_ranks_the_sized_pool_first(used: str, fix_rule: str, must_name: str) -> None:
    crash = diagnose_log(
        "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
        f"in memory space hbm. Used {used} of 15.48G hbm. Exceeded hbm capacity by 40.00M.\n",
        "hbm.log",
    )
    assert crash.category == "hbm_oom"
    assert crash.evidence.fix_rule == fix_rule, crash.fix
    assert must_name in crash.fix
