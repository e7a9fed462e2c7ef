"""Families of wording that round diag53 added to the rules: TorchTPU's own error outputs.

TorchTPU checks the arguments of its collectives before running them and prints "distributed.<collective>():
<what must hold>, got <what was given>": a list whose length is not one tensor per rank
(`torch_tpu_collective_tensor_count`), the large tensor of all_gather_into_tensor or reduce_scatter_tensor
of the wrong size (`torch_tpu_collective_big_tensor_size`), all_to_all_single's split sizes
(`torch_tpu_all_to_all_split_sizes`), and any other check, quoted (`torch_tpu_collective_arguments`). A
factory given a negative size (TorchTPU's "empty(): dimension sizes must be >= 0" and PyTorch's "Trying to
create tensor with negative dimension") is `negative_tensor_size`. And the line pjrt_api.cc logs at INFO on
every start, naming the plugin's and the framework's PJRT API versions, no longer makes a log a version
mismatch.

Each case is another wording of its family (another collective, sizes and world size than the corpus files),
and each family has a nearby wording it must not claim (PyTorch's own c10d wordings, a view's inferred
size), so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed, diagnose_rules_alone

_CAT = "shape_dtype_error"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "RuntimeError: distributed.all_to_all(): output and input tensors must have the same number of "
            "tensors, got 5 for output and 4 for input",
            "range(world_size)",
        ),
        (
            "RuntimeError: distributed.reduce_scatter(): length of input tensors list must match world size, "
            "got 3 input tensors and 4 processes.",
            "got 3 input tensors and 4 processes",
        ),
    ],
)
def test_a_list_not_one_tensor_per_rank(text: str, named: str) -> None:
    crash = assert_fixed_by(text, _CAT, "torch_tpu_collective_tensor_count", named)
    assert "one tensor per rank" in crash.fix


def test_pytorch_c10d_participant_count_is_not_the_torch_tpu_check() -> None:
    assert_not_claimed(
        "ValueError: Tensor list input to scatter/gather must match number of collective participants "
        "but got 9 inputs and 8 participants.",
        "torch_tpu_collective_tensor_count",
    )


def test_the_large_tensor_of_a_stacking_all_gather() -> None:
    crash = assert_fixed_by(
        "RuntimeError: distributed.all_gather_into_tensor(): for stacking, output tensor size at dimension 0 "
        "must be world size. Got output shape [3, 2, 2], input shape [2, 2], world size 4",
        _CAT,
        "torch_tpu_collective_big_tensor_size",
        "torch.empty((world_size, *x.shape))",
    )
    assert "Got output shape [3, 2, 2]" in crash.fix


def test_nccl_output_size_wording_is_not_the_torch_tpu_check() -> None:
    assert_not_claimed(
        "RuntimeError: output tensor size must be equal to world_size times input tensor size",
        "torch_tpu_collective_big_tensor_size",
    )


def test_all_to_all_single_split_sizes_of_another_length() -> None:
    assert_fixed_by(
        "RuntimeError: distributed.all_to_all_single(): split sizes must have the same size as process group "
        "size, got 4 for process group size and 3 for split sizes [2 2 4]",
        _CAT,
        "torch_tpu_all_to_all_split_sizes",
        "one entry per rank",
    )


def test_pytorch_split_sizes_wording_is_not_the_torch_tpu_check() -> None:
    assert_not_claimed(
        "RuntimeError: Split sizes doesn't match total dim 0 size",
        "torch_tpu_all_to_all_split_sizes",
    )


def test_any_other_collective_check_is_quoted() -> None:
    assert_fixed_by(
        "RuntimeError: distributed.all_to_all(): all input tensors must be of same shape, got [2] at index 1 "
        "and [1] at index 0",
        _CAT,
        "torch_tpu_collective_arguments",
        "all input tensors must be of same shape, got [2] at index 1 and [1] at index 0",
    )


def test_a_collective_message_stating_no_condition_is_not_claimed() -> None:
    assert_not_claimed(
        "RuntimeError: distributed.barrier(): timed out after 300 seconds waiting for rank 3",
        "torch_tpu_collective_arguments",
    )


def test_pytorch_negative_dimension() -> None:
    assert_fixed_by(
        "RuntimeError: Trying to create tensor with negative dimension -5: [4, -5]",
        _CAT,
        "negative_tensor_size",
        "[4, -5]",
    )


def test_a_view_with_two_inferred_sizes_is_not_a_negative_size() -> None:
    assert_not_claimed("RuntimeError: only one dimension can be inferred", "negative_tensor_size")


_PJRT_INFO = (
    "I0000 00:00:1772838266.184421 2410129 pjrt_api.cc:167] The PJRT plugin has PJRT API version 0.57. "
    "The framework PJRT API version is 0.61.\n"
)


def test_the_pjrt_start_up_info_line_is_not_a_version_mismatch() -> None:
    crash = diagnose_rules_alone(_PJRT_INFO + "RuntimeError: expected scalar type Float but found BFloat16")
    assert crash.category != "version_mismatch", crash.evidence.fix_rule


def test_a_refused_pjrt_version_still_is() -> None:
    assert_fixed_by(
        _PJRT_INFO + "F0000 00:00:1772838266.2 2410129 pjrt_computation_client.cc:158] Non-OK-status: "
        "INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version (0.57) and framework PJRT API "
        "version 0.61).",
        "version_mismatch",
        "pjrt_api_mismatch",
        "0.57",
    )


def test_a_torch_tpu_mesh_check_is_placed_by_where_it_was_raised() -> None:
    """No rule or word cue knows TorchTPU's mesh check; its raise site (topology_aware_mesh's validation,
    mined from the installed torch_tpu) names a start-up failure."""
    crash = diagnose_rules_alone(
        "ValueError: mesh_shape=(4, 4) has 16 elements but the job has 8 devices across 2 slices. mesh_shape "
        "describes the full mesh, so pass a shape whose product is 8 and let dcn_mesh_shape carve out the "
        "slices."
    )
    assert crash.category == "runtime_init_failure", crash.evidence.fix_rule
    assert crash.facts["raise_location"] == [
        "message raised in torch_tpu._internal.distributed.device_mesh (_validate_multi_slice)"
    ]


def test_a_torch_tpu_compiler_bug_in_the_same_module_is_not_a_start_up_failure() -> None:
    """Only the constructor of process_group_utils' rank list is mapped: its graph helper's own bug report is
    not a start-up failure."""
    crash = diagnose_rules_alone(
        "ValueError: expected node target to be in the collective registry, got aten.add.Tensor. This is a "
        "torch_tpu bug."
    )
    assert crash.category != "runtime_init_failure", crash.evidence.fix_rule
    assert "raise_location" not in crash.facts
