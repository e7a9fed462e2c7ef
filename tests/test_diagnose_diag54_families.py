"""Families of wording that round diag54 added to the rules: more of TorchTPU's own error outputs.

TorchTPU checks its environment variables when it reads them ("<VARIABLE> must be an integer, got
'invalid'.", "... must be non-negative, got -100."), and `torch_tpu_env_var_invalid` names the variable, what
it must be and the value read. Its torch.compile backend refuses dynamic shapes with wordings that all end
"Please set torch.compile(..., dynamic=False, ...) and try again." (`torch_tpu_compile_dynamic_shapes`, which
quotes the lowering error when the message gives one). PyTorch's c10d check that a collective's tensors share
one dtype (`c10d_tensors_different_dtypes`) names the two dtypes. And its kernels' "<op>(): the out tensor is
expected to be on tpu, got cpu" and "<op>(): tensor is expected to be on tpu, got cpu" join the out= and input
device checks (`torch_tpu_out_tensor_device`, `torch_tpu_tensor_on_other_device`).

Each case is another wording of its family (another variable, op, dtype or lowering error than the corpus
files), and each family has a nearby wording it must not claim, so a rule matching only a collected log's text
would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "ValueError: TORCH_TPU_INTERNAL_HANDSHAKE_TIMEOUT_S must be an integer, got '30s'.",
            "export TORCH_TPU_INTERNAL_HANDSHAKE_TIMEOUT_S=<value>",
        ),
        (
            "ValueError: TORCH_TPU_COMPILE_WORKERS must be strictly positive, got 0.",
            "unset TORCH_TPU_COMPILE_WORKERS",
        ),
    ],
)
def test_a_torch_tpu_environment_variable_that_fails_its_check(text: str, named: str) -> None:
    crash = assert_fixed_by(text, "runtime_init_failure", "torch_tpu_env_var_invalid", named)
    value = text.rsplit("got ", 1)[1].rstrip(".")
    assert value in crash.fix


def test_an_internal_count_that_must_be_non_negative_is_not_an_environment_variable() -> None:
    assert_not_claimed(
        "ValueError: collective_count_before must be non-negative, got -1.",
        "torch_tpu_env_var_invalid",
    )


def test_a_symint_usage_the_backend_cannot_handle() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: Detected following unhandled SymInt usage(s) in FX graph. Please set "
        "torch.compile(..., dynamic=False, ...) and try again.\n"
        "  - Node 'view' (op='call_function', target=aten.view.default) uses SymInt input 's0'",
        "unsupported_op",
        "torch_tpu_compile_dynamic_shapes",
        "dynamic=False",
    )
    assert "failed to lower" not in crash.fix


def test_a_lowering_error_is_quoted() -> None:
    assert_fixed_by(
        "torch._dynamo.exc.BackendCompilerFailed: backend='tpu' raised:\n"
        "NotImplementedError: Failed to lower FX graph with dynamic shapes to MLIR with error: unsupported "
        "bounded dimension on aten.cumsum. Please set torch.compile(..., dynamic=False, ...) and try again.",
        "unsupported_op",
        "torch_tpu_compile_dynamic_shapes",
        "unsupported bounded dimension on aten.cumsum",
    )


def test_a_dynamo_dynamic_shape_operator_is_not_the_backend_refusal() -> None:
    assert_not_claimed(
        "torch._dynamo.exc.Unsupported: dynamic shape operator: aten.nonzero.default; to enable, set "
        "torch._dynamo.config.capture_dynamic_output_shape_ops = True",
        "torch_tpu_compile_dynamic_shapes",
    )


def test_a_collective_given_two_dtypes_names_them() -> None:
    crash = assert_fixed_by(
        "ValueError: Invalid usage of tensors with different dtypesFound torch.bfloat16 and  torch.float32",
        "shape_dtype_error",
        "c10d_tensors_different_dtypes",
        "same dtype",
    )
    assert "(torch.bfloat16 and torch.float32)" in crash.fix


def test_an_elementwise_dtype_mismatch_is_not_the_collective_check() -> None:
    assert_not_claimed(
        "RuntimeError: expected scalar type Float but found BFloat16",
        "c10d_tensors_different_dtypes",
    )


def test_an_out_tensor_on_the_cpu_in_the_kernels_wording() -> None:
    assert_fixed_by(
        "RuntimeError: index_select(): the out tensor is expected to be on tpu, got cpu",
        "shape_dtype_error",
        "torch_tpu_out_tensor_device",
        'device="tpu"',
    )


def test_an_input_on_the_cpu_in_the_kernels_wording() -> None:
    assert_fixed_by(
        "RuntimeError: masked_select(): tensor is expected to be on tpu, got cpu",
        "shape_dtype_error",
        "torch_tpu_tensor_on_other_device",
        '.to("tpu")',
    )


def test_a_cuda_out_tensor_check_is_not_the_torch_tpu_one() -> None:
    assert_not_claimed(
        "RuntimeError: Expected out tensor to have device cuda:0, but got cpu instead",
        "torch_tpu_out_tensor_device",
    )
