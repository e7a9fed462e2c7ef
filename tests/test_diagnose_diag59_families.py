"""Families of wording that round diag59 added to the rules: torchprime's trainer configuration checks.

torchprime (https://github.com/AI-Hypercomputer/torchprime) checks a trainer configuration at start-up: its
mesh must use every device ("Mesh is not using all the available devices ...": `torchprime_mesh_device_count`,
the device count and the ICI and DCN meshes named), context parallelism needs its size in the model config
(`torchprime_context_size_in_model`) and, load-balanced, the splash attention kernel
(`torchprime_load_balanced_cp_kernel`), an even size (`context_parallel_size_odd`) and a sequence length
divisible into 2 x cp_size chunks (`context_parallel_sequence_chunks`); its Adafactor takes no weight decay
(`adafactor_weight_decay`), its custom mesh at most one DCN axis above 1 (`single_nontrivial_dcn_axis`), and
its trainer one parameter dtype (`model_parameters_mixed_dtypes`).

Each case is another wording of its family (other sizes, dtypes and axes, under a traceback), and each family
has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_TRACE = (
    'Traceback (most recent call last):\n  File "torchprime/torch_xla_models/train.py", line 88, in main\n'
)


def test_a_mesh_asking_for_more_devices_than_the_slice_has() -> None:
    crash = assert_fixed_by(
        _TRACE
        + "AssertionError: Mesh is not using all the available devices. The environment has 4 devices. "
        "    Mesh requested: ICI={'data': 1, 'fsdp': 8, 'tensor': 2, 'expert': 1, 'context': 1}, "
        "DCN={'data': 2, 'fsdp': 1, 'tensor': 1, 'expert': 1, 'context': 1}",
        "runtime_init_failure",
        "torchprime_mesh_device_count",
        "ici_mesh",
    )
    assert "the device count, 4 here" in (crash.fix or "")
    assert "'tensor': 2" in (crash.fix or "")


def test_jaxs_mesh_size_check_is_not_torchprimes() -> None:
    assert_not_claimed(
        "ValueError: Number of devices 8 must equal the product of mesh_shape (4, 4)",
        "torchprime_mesh_device_count",
    )


def test_the_context_size_missing_from_the_model_config() -> None:
    assert_fixed_by(
        _TRACE + "RuntimeError: Specify the context parallelism size in config.model",
        "runtime_init_failure",
        "torchprime_context_size_in_model",
        "model.context",
    )


def test_a_context_parallel_group_missing_is_not_the_config_check() -> None:
    assert_not_claimed(
        "RuntimeError: context parallel group is not initialized, call initialize_model_parallel first",
        "torchprime_context_size_in_model",
    )


def test_load_balanced_context_parallelism_with_flash_attention() -> None:
    assert_fixed_by(
        _TRACE
        + "RuntimeError: Load balanced context parallelism is only supported with the splash attention "
        "kernel",
        "runtime_init_failure",
        "torchprime_load_balanced_cp_kernel",
        "attention_kernel=splash_attention",
    )


def test_ring_attention_refusing_a_kernel_is_not_load_balanced_cp() -> None:
    assert_not_claimed(
        "ValueError: Ring attention is only supported with the flash attention kernel",
        "torchprime_load_balanced_cp_kernel",
    )


def test_an_odd_context_size() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: cp_size=5 must be a multiple of 2.",
        "shape_dtype_error",
        "context_parallel_size_odd",
        "ici_mesh.context",
    )
    assert "5 is not" in (crash.fix or "")


def test_a_sequence_not_divisible_into_the_chunks() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: tensor.shape=torch.Size([1, 3000, 16, 64]) is not a multiple of cp_size*2=16",
        "shape_dtype_error",
        "context_parallel_sequence_chunks",
        "block_size",
    )
    assert "a multiple of 16" in (crash.fix or "")
    assert "torch.Size([1, 3000, 16, 64])" in (crash.fix or "")


def test_another_multiple_of_check_is_not_context_parallelism() -> None:
    assert_not_claimed(
        "ValueError: block_size=3 must be a multiple of 2 for the tiled kernel",
        "context_parallel_size_odd",
    )
    assert_not_claimed(
        "ValueError: seq_len=3000 is not a multiple of block_q=512",
        "context_parallel_sequence_chunks",
    )


def test_adafactor_refusing_weight_decay_under_a_traceback() -> None:
    assert_fixed_by(
        _TRACE + "AssertionError: Adafactor does not support weight_decay",
        "runtime_init_failure",
        "adafactor_weight_decay",
        "weight_decay",
    )


def test_adafactor_refusing_momentum_is_not_weight_decay() -> None:
    assert_not_claimed(
        "ValueError: Adafactor does not support momentum; use beta1 instead",
        "adafactor_weight_decay",
    )


def test_two_dcn_axes_above_one() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: Only one non-trivial DCN mesh dimension is supported",
        "runtime_init_failure",
        "single_nontrivial_dcn_axis",
        "at most one dcn_mesh dimension",
    )


def test_an_ici_axis_refusal_is_not_the_dcn_check() -> None:
    assert_not_claimed(
        "ValueError: Only one non-trivial ICI mesh dim is supported",
        "single_nontrivial_dcn_axis",
    )


def test_parameters_in_three_dtypes() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Inconsistent dtypes found: {torch.bfloat16, torch.float16, torch.float32}",
        "shape_dtype_error",
        "model_parameters_mixed_dtypes",
        "model.to(torch.bfloat16)",
    )
    assert "torch.float16" in (crash.fix or "")


def test_inconsistent_shapes_are_not_mixed_dtypes() -> None:
    assert_not_claimed(
        "ValueError: Inconsistent shapes found: {torch.Size([4, 8]), torch.Size([4, 16])}",
        "model_parameters_mixed_dtypes",
    )
