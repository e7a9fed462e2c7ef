"""TorchTPU's own native refusals: the messages its native library (the installed torch_tpu 0.2.0's
`libpywrap_2_13_0_common.so`) raises, which a PyTorch user on TPU meets first: an aten op with no TPU
kernel (run on the CPU, or refused), sparse tensors, collectives whose buffers differ across ranks, the float8
matmul's fast accumulation, CUDA-style memory calls, a FakeTensor reaching a TPU kernel, dtypes it lacks,
attention restricted to a backend it cannot use, Pallas kernels on part of the world, an out= tensor or an
input off the TPU, a host copy of another dtype or shape, a build for other torch releases, a second libtpu, a
forked child, a device node another process holds, its handshake port taken, a process with other than one
device, more processes than chips, a first process group smaller than the world, a mesh
whose outermost axis the slice count does not divide, and an integer environment variable holding text.

Each case uses other values than the rules' comments (another op, call, size or side); the assertions check
the category, the sub-rule and what the fix names, and each family has a nearby wording it must not claim.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "UserWarning: The operator 'aten::_cdist_backward' is not implemented for TPU. "
            "Falling back to CPU",
            "unsupported_op",
            "torch_tpu_op_cpu_fallback",
            "tpu-agent ops show aten::_cdist_backward",
        ),
        (
            "NotImplementedError: The operator 'aten::_linalg_svd' is not implemented for TPU. "
            "Please file a feature request",
            "unsupported_op",
            "torch_tpu_op_not_implemented",
            "tpu-agent ops show aten::_linalg_svd",
        ),
        (
            "RuntimeError: _to_sparse_csr(): sparse operators are not supported on TPU yet",
            "unsupported_op",
            "torch_tpu_sparse_tensor",
            "_to_sparse_csr() was refused",
        ),
        (
            "RuntimeError: asymmetric output buffer sizes across ranks are not supported on TPU. ",
            "unsupported_op",
            "torch_tpu_asymmetric_collective",
            "the output sizes differ",
        ),
        (
            "RuntimeError: use_fast_accum=true is not supported yet on TPU",
            "unsupported_op",
            "torch_tpu_fast_accum",
            "use_fast_accum=False",
        ),
        (
            "NotImplementedError: torch.accelerator.memory.memory_stats is not implemented for TPU.",
            "unsupported_op",
            "torch_tpu_memory_api",
            "torch.accelerator.memory.memory_stats",
        ),
        (
            "RuntimeError: TpuPinnedAllocator::empty_cache is not implemented for TPU.",
            "unsupported_op",
            "torch_tpu_memory_api",
            "TpuPinnedAllocator::empty_cache",
        ),
        (
            "RuntimeError: tensor is on the custom PrivateUse1 device. But its storage data_ptr is null. "
            "This is usually caused by FakeTensor being run on TPU ops. And it is not supported",
            "unsupported_op",
            "torch_tpu_fake_tensor_in_tpu_op",
            "torch.library.register_fake",
        ),
        (
            "RuntimeError: TorchTPU does not yet support dtype ComplexFloat",
            "unsupported_op",
            "torch_tpu_dtype",
            "no ComplexFloat tensors",
        ),
        (
            "RuntimeError: TorchTPU only supports SHLO optimized MATH SDPBackend when these conditions "
            "are met:\n"
            "- dropout_p is 0.0 (current: 0.1)",
            "unsupported_op",
            "torch_tpu_sdpa_backend",
            "SDPBackend.MATH",
        ),
        (
            "RuntimeError: expected output tensor to be on 'tpu' device, got 'cpu'",
            "shape_dtype_error",
            "torch_tpu_out_tensor_device",
            'device="tpu"',
        ),
        (
            "RuntimeError: expected exactly one TPU device per PyTorch process",
            "runtime_init_failure",
            "torch_tpu_one_device_per_process",
            "--nproc-per-node",
        ),
        (
            "RuntimeError: expected environment variable LOCAL_RANK to be in [0, 8) "
            "(TORCH_TPU_DEVICES_PER_HOST), got 9 (9)",
            "runtime_init_failure",
            "torch_tpu_local_rank_out_of_range",
            "LOCAL_RANK 9 is not below the TPU devices of this host (8",
        ),
        (
            "RuntimeError: expected 'tpu' device, got 'meta'",
            "shape_dtype_error",
            "torch_tpu_tensor_on_other_device",
            '.to("tpu")',
        ),
        (
            "RuntimeError: cpu_src_tensor and tpu_dst_tensor must have the same shape",
            "shape_dtype_error",
            "torch_tpu_host_copy_mismatch",
            "tpu_tensor.copy_(cpu_tensor)",
        ),
        (
            "RuntimeError: expected libtpu version to match previously set version '0.0.30', got '0.0.28'",
            "version_mismatch",
            "torch_tpu_second_libtpu",
            "jax[cpu]",
        ),
        (
            "ImportError: torch_tpu has no extension module compatible with PyTorch 2.9.1: it predates the "
            "oldest supported release. Extensions are available for PyTorch: 2.12.0, 2.13.0.",
            "version_mismatch",
            "torch_tpu_built_for_other_torch",
            "PyTorch 2.12.0, 2.13.0 only, and the interpreter has PyTorch 2.9.1",
        ),
        (
            "ValueError: torch_tpu pallas kernels currently require full world-size meshes",
            "unsupported_op",
            "torch_tpu_pallas_partial_mesh",
            "every rank of the world",
        ),
        (
            "RuntimeError: handshake port 9123 is not available for usage. You can set the "
            "'TORCH_TPU_INTERNAL_HANDSHAKE_PORT' environment variable to use a different port.",
            "runtime_init_failure",
            "torch_tpu_handshake_port_taken",
            "TORCH_TPU_INTERNAL_HANDSHAKE_PORT",
        ),
        (
            "RuntimeError: the out tensor must be on TPU",
            "shape_dtype_error",
            "torch_tpu_out_tensor_device",
            'device="tpu"',
        ),
        (
            "RuntimeError: cannot access or re-initialize TPU in a forked subprocess. To use TPU with "
            "multiprocessing, you must use the 'spawn' start method",
            "runtime_init_failure",
            "torch_tpu_forked_subprocess",
            'multiprocessing_context="spawn"',
        ),
        (
            "RuntimeError: [TorchTPU] Failed to acquire a TPU device node\n"
            "Colliding process(es):\n  pid 4242",
            "runtime_init_failure",
            "torch_tpu_device_node_busy",
            "tpu-info",
        ),
        (
            "RuntimeError: the first initialized ProcessGroupTpu must be of size WORLD_SIZE "
            "(expected size 16, got 2)",
            "runtime_init_failure",
            "torch_tpu_first_group_not_world",
            "covered 2 of the 16 ranks",
        ),
        (
            "ValueError: Cannot spread mesh_shape=(6, 8) over 4 slices: the outermost non-trivial axis "
            "(axis 0, extent 6) is not divisible by 4. Refusing to fall back to an inner axis",
            "runtime_init_failure",
            "torch_tpu_mesh_split_over_slices",
            "axis 0 has extent 6",
        ),
        (
            "[W1207 09:00:00.000000000 env_vars.h:466] Warning: <TorchTpu/Correctness/> expected "
            "environment variable TORCH_TPU_BASE_PORT to be an integer, got '8070/tcp' (function operator())",
            "runtime_init_failure",
            "torch_tpu_env_not_integer",
            "set TORCH_TPU_BASE_PORT to a plain integer",
        ),
    ],
)
def test_torch_tpu_native_refusals_get_their_own_fix(
    text: str, category: str, sub_rule: str, named: str
) -> None:
    assert_fixed_by(text + "\n", category, sub_rule, named)


@pytest.mark.parametrize(
    ("text", "sub_rule"),
    [
        # PyTorch/XLA's counter of an op run on the CPU is not TorchTPU's fallback
        ("Counter: aten::_cdist_backward\n  Value: 12", "torch_tpu_op_cpu_fallback"),
        # CUDA's fork refusal is another library's, with its own rule
        ("RuntimeError: Cannot re-initialize CUDA in forked subprocess.", "torch_tpu_forked_subprocess"),
        # another check of the same collective (trailing dimensions), not the size asymmetry
        (
            "RuntimeError: expected trailing dimensions of output tensors to match, got [4] and [8]",
            "torch_tpu_asymmetric_collective",
        ),
        # a sparse op refused by PyTorch/XLA's lowering names no TorchTPU sparse support
        (
            "RuntimeError: Could not run 'aten::_to_sparse' with arguments from the 'XLA' backend.",
            "torch_tpu_sparse_tensor",
        ),
        # AXLearn's own wording of a mesh axis the slice count does not divide has its own rule
        (
            "ValueError: First non-singleton mesh axis 0 with value 6 must be divisible by the number of "
            "slices/granules 4.",
            "torch_tpu_mesh_split_over_slices",
        ),
        # an integer flag refused by another parser names no TorchTPU environment variable
        (
            "ValueError: invalid literal for int() with base 10: '8070/tcp'",
            "torch_tpu_env_not_integer",
        ),
    ],
)
def test_nearby_wordings_are_not_claimed_by_the_torch_tpu_family(text: str, sub_rule: str) -> None:
    assert_not_claimed(text + "\n", sub_rule)
