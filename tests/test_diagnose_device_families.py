"""Common wordings people paste: devices, tracers, TF TPU placement, GKE scheduling, serving architectures.

A model moved to the TPU with one tensor left on the CPU (a batch, a mask built in forward, a constant
that is not a buffer) stops at PyTorch's own check, in two wordings across releases, and `param.data = t`
across devices stops at the storage check. A traced value used as a dict key or leaked out of jit, and
TensorFlow placing an op on a TPU it never connected to, a Pod no GKE node takes (selectors, the TPU taint, a
namespace quota), a model class a serving engine lacks, torch.distributed before its process group or with
its port taken, and a TPU framework missing from the interpreter are the other families. Each case is a
wording of the family with other values; the assertions check the category, the sub-rule and what the fix
names.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "sub_rule", "named"),
    [
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "xla:0 and cpu!",
            "tensors_on_two_devices",
            "tensors on xla:0 and on cpu",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
            "cpu and tpu:3! (when checking argument for argument index in method wrapper__index_select)",
            "tensors_on_two_devices",
            "tensors on cpu and on tpu:3",
        ),
        (
            "RuntimeError: Expected all tensors to be on the same device, but got mat2 is on cpu, different "
            "from other tensors on tpu:0 (when checking argument in method wrapper_TPU_bmm)",
            "tensors_on_two_devices",
            "its argument mat2",
        ),
        (
            'RuntimeError: Attempted to set the storage of a tensor on device "xla:1" to a storage on '
            'different device "cpu".  This is no longer allowed; the devices must match.',
            "storage_swapped_across_devices",
            "tensor on xla:1 with one on cpu",
        ),
    ],
)
def test_device_family(text: str, sub_rule: str, named: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == f"shape_dtype_error/{sub_rule}"
    assert named in crash.fix and "model.to" in crash.fix.replace("module.to", "model.to")


def test_a_device_that_is_missing_is_not_this_family() -> None:
    """No device to move to is a start-up failure, not tensors on two devices."""
    crash = _diagnose(
        "RuntimeError: Expected one of cpu, cuda, xpu, tpu device type at start of device string: tpuu"
    )
    assert crash.evidence.fix_rule not in (
        "shape_dtype_error/tensors_on_two_devices",
        "shape_dtype_error/storage_swapped_across_devices",
    )


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "TypeError: unhashable type: 'DynamicJaxprTracer'",
            "xla_compile_error",
            "traced_value_as_static",
            "static_argnums",
        ),
        (
            "TypeError: unhashable type: 'BatchTracer'",
            "xla_compile_error",
            "traced_value_as_static",
            "static_argnums",
        ),
        (
            "jax.errors.UnexpectedTracerError: Encountered an unexpected tracer. A function transformed by "
            "JAX had a side effect, allowing for a reference to an intermediate value with type int32[] "
            "wrapped in a DynamicJaxprTracer to escape the scope of the transformation.",
            "xla_compile_error",
            "leaked_tracer",
            "jax.checking_leaks",
        ),
        (
            "InvalidArgumentError: Cannot assign a device for operation embedding/Read: node embedding/Read "
            "was explicitly assigned to /job:worker/replica:0/task:1/device:TPU:3 but available devices are "
            "[ /job:localhost/replica:0/task:0/device:CPU:0 ].",
            "runtime_init_failure",
            "tensorflow_tpu_device_not_connected",
            "experimental_connect_to_cluster",
        ),
        (
            "  Warning  FailedScheduling  3m  default-scheduler  0/5 nodes are available: 5 node(s) didn't "
            "match Pod's node affinity/selector. preemption: 0/5 nodes are available: 5 Preemption is not "
            "helpful for scheduling.",
            "runtime_init_failure",
            "gke_node_selector_unmatched",
            "cloud.google.com/gke-tpu-topology",
        ),
        (
            "0/2 nodes are available: 2 node(s) had untolerated taint {google.com/tpu: present}. preemption: "
            "0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
            "runtime_init_failure",
            "gke_taint_not_tolerated",
            "taint google.com/tpu: present",
        ),
        (
            'Error from server (Forbidden): error when creating "jobset.yaml": pods "train-0" is forbidden: '
            "exceeded quota: team-a-tpus, requested: google.com/tpu=8, used: google.com/tpu=16, limited: "
            "google.com/tpu=16",
            "runtime_init_failure",
            "namespace_resource_quota",
            "resourcequota team-a-tpus",
        ),
        (
            "ValueError: Model architectures ['Glm4MoeForCausalLM'] are not supported for now. Supported "
            "architectures: dict_keys([...])",
            "unsupported_op",
            "serving_architecture_unsupported",
            "MODEL_IMPL_TYPE",
        ),
        (
            "RuntimeError: torch.distributed is not initialized. Call init_process_group first.",
            "runtime_init_failure",
            "process_group_not_initialised",
            'backend="tpu_dist"',
        ),
        (
            "ValueError: Default process group has not been initialized, please make sure to call "
            "init_process_group.",
            "runtime_init_failure",
            "process_group_not_initialised",
            "xla://",
        ),
        (
            "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
            "network address. The server socket has failed to bind to [::]:12355 (errno: 98 - Address "
            "already in use).",
            "runtime_init_failure",
            "rendezvous_port_in_use",
            "bind its port 12355",
        ),
        (
            "ModuleNotFoundError: No module named 'torch_tpu'",
            "version_mismatch",
            "framework_not_installed",
            "pip install torch_tpu",
        ),
        (
            "ModuleNotFoundError: No module named 'jax'",
            "version_mismatch",
            "framework_not_installed",
            "has no jax",
        ),
    ],
)
def test_family(text: str, category: str, sub_rule: str, named: str) -> None:
    crash = _diagnose(text)
    assert (crash.category, crash.evidence.fix_rule) == (category, f"{category}/{sub_rule}")
    assert named in crash.fix


def test_nearby_wordings_are_not_claimed() -> None:
    """An unhashable list is no tracer, and a GPU op with no GPU is not a TPU connection problem."""
    assert _diagnose("TypeError: unhashable type: 'list'").evidence.fix_rule != (
        "xla_compile_error/traced_value_as_static"
    )
    gpu = _diagnose(
        "InvalidArgumentError: Cannot assign a device for operation MatMul: node MatMul was explicitly "
        "assigned to /device:GPU:0 but available devices are "
        "[ /job:localhost/replica:0/task:0/device:CPU:0 ]."
    )
    assert gpu.evidence.fix_rule != "runtime_init_failure/tensorflow_tpu_device_not_connected"


def test_a_scheduler_short_of_chips_keeps_its_own_fix() -> None:
    """Too few chips is the capacity fix, not the selector one, even beside a selector mismatch."""
    crash = _diagnose(
        "0/4 nodes are available: 4 Insufficient google.com/tpu. preemption: 0/4 nodes are available: "
        "4 No preemption victims found for incoming pod."
    )
    assert crash.evidence.fix_rule != "runtime_init_failure/gke_node_selector_unmatched"
    assert "google.com/tpu," in crash.fix  # the resource without the sentence's full stop


def test_a_missing_submodule_or_libtpu_keeps_its_own_rule() -> None:
    """A submodule of another release and a missing libtpu are not a framework left uninstalled."""
    moved = _diagnose("ModuleNotFoundError: No module named 'jax.experimental.pallas.ops'")
    assert moved.evidence.fix_rule != "version_mismatch/framework_not_installed"
    libtpu = _diagnose("ModuleNotFoundError: No module named 'libtpu'")
    assert libtpu.category == "runtime_init_failure"


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: Could not find a version that satisfies the requirement jax[tpu] (from versions: none)",
        "ERROR: Could not find a version that satisfies the requirement torch_tpu==0.2.0 "
        "(from versions: none)",
        "ERROR: No matching distribution found for vllm-tpu==0.11.1",
    ],
)
def test_pip_finding_no_tpu_wheel(text: str) -> None:
    """Every TPU framework's missing wheel is the index/Python fix, jax and torch_tpu as much as libtpu."""
    crash = _diagnose(text)
    assert (crash.category, crash.evidence.fix_rule) == (
        "version_mismatch",
        "version_mismatch/wheel_not_on_index",
    )
    assert "pip cannot find" in crash.fix


def test_a_package_whose_name_starts_like_jax_is_not_jax() -> None:
    crash = _diagnose(
        "ERROR: Could not find a version that satisfies the requirement jaxtyping==9.9 (from versions: none)"
    )
    assert crash.category != "version_mismatch"  # the TPU-wheel pattern names jax, not any jax* package


@pytest.mark.parametrize(
    "text",
    [
        "AssertionError: Torch not compiled with CUDA enabled",
        "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
        "installed a driver from http://www.nvidia.com/Download/index.aspx",
    ],
)
def test_cuda_code_on_a_tpu_host(text: str) -> None:
    """Code written for a CUDA GPU, run on a TPU VM: the fix names the TPU device to pass instead."""
    crash = _diagnose(text)
    assert crash.evidence.fix_rule == "runtime_init_failure/cuda_called_on_tpu_host"
    assert 'torch.device("tpu")' in crash.fix and ".to(device)" in crash.fix


def test_a_gpu_kernel_image_error_is_not_this_family() -> None:
    crash = _diagnose("RuntimeError: CUDA error: no kernel image is available for execution on the device")
    assert crash.evidence.fix_rule != "runtime_init_failure/cuda_called_on_tpu_host"
