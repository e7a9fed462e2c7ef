"""Two dtypes a check set against each other, named in the fix (gm73,
`tpu_runtime/diagnose/crash_dtype_facts.py` with `tpu_runtime/data/crash_fix_packs/cast_dtype_pairs.yaml`):
an executable's argument in another width of the same kind (jax's x64 mode), two integer or two float widths
one op received, a torch layer whose input and parameters differ, and a check that lists the dtypes it takes.
Wordings written for these tests, each with a nearby wording the mechanism must not claim."""

from __future__ import annotations

import pytest
from crash_helpers import diagnose_fallbacks_alone

from tpu_runtime.diagnose.crash_dtype_facts import dtype_name, dtype_pair_facts

PACK = "shape_dtype_error/from_facts_"


@pytest.mark.parametrize(
    ("printed", "name"),
    [
        ("s64", "int64"),
        ("c10::Half", "float16"),
        ("long int", "int64"),
        ("torch.cuda.HalfTensor", "float16"),
        ("PRED", "bool"),
        ("ComplexFloat", "complex64"),
        ("instead", None),
    ],
)
def test_dtype_names_as_libraries_print_them(printed: str, name: str | None) -> None:
    assert dtype_name(printed) == name


@pytest.mark.parametrize(
    ("line", "want", "got"),
    [
        (
            "INVALID_ARGUMENT: Argument does not match host shape or layout of computation parameter 2: "
            "want s32[16]{0}, got s64[16]{0}",
            "int32",
            "int64",
        ),
        (
            "XlaRuntimeError: INVALID_ARGUMENT: Executable expected shape f32[4,8]{1,0} for argument 1 "
            "but got incompatible shape f64[4,8]{1,0}",
            "float32",
            "float64",
        ),
    ],
)
def test_an_argument_in_another_width_names_the_x64_setting(line: str, want: str, got: str) -> None:
    crash = diagnose_fallbacks_alone(f"{line}\n")
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == PACK + "x64_argument_width"
    assert (
        "jax_enable_x64" in crash.fix and f"compiled for {want} arguments and called with {got}" in crash.fix
    )


@pytest.mark.parametrize(
    "line",
    [
        # two float kinds, not two widths of one: no x64 question
        "INVALID_ARGUMENT: Argument does not match host shape or layout of computation parameter 0: "
        "want f32[4,8]{1,0}, got bf16[4,8]{1,0}",
        # one dtype, another batch: a shape, not a width
        "XlaRuntimeError: INVALID_ARGUMENT: Executable expected shape f32[8,16]{1,0} for argument 0 but got "
        "incompatible shape f32[6,16]{1,0}",
    ],
)
def test_an_argument_of_another_kind_or_shape_is_not_an_x64_width(line: str) -> None:
    assert "dtype_wide" not in dtype_pair_facts([line])
    assert diagnose_fallbacks_alone(f"{line}\n").evidence.fix_rule != PACK + "x64_argument_width"


def test_two_integer_widths_in_one_op_name_the_index_cast() -> None:
    crash = diagnose_fallbacks_alone(
        "RuntimeError: Cannot concatenate arrays with different element types: s32 vs s64\n"
    )
    assert crash.evidence.fix_rule == PACK + "integer_width_pair"
    assert ".long()" in crash.fix and "int32 and int64" in crash.fix


def test_two_float_widths_in_one_op_name_the_wider() -> None:
    crash = diagnose_fallbacks_alone(
        "RuntimeError: Cannot concatenate arrays with different element types: F16 vs F32\n"
    )
    assert crash.evidence.fix_rule == PACK + "float_width_pair"
    assert "cast the float16 operand to float32" in crash.fix


def test_an_integer_against_a_float_keeps_the_element_type_fallback() -> None:
    line = "RuntimeError: Cannot concatenate arrays with different element types: f32 vs s32"
    assert "dtype_wide" not in dtype_pair_facts([line])
    crash = diagnose_fallbacks_alone(f"{line}\n")
    assert crash.evidence.fix_rule not in (PACK + "integer_width_pair", PACK + "float_width_pair")


def test_a_layer_whose_input_and_weights_differ_names_one_load_dtype() -> None:
    crash = diagnose_fallbacks_alone(
        "RuntimeError: Input type (c10::BFloat16) and weight type (float) should be the same\n"
    )
    assert crash.evidence.fix_rule == PACK + "module_param_dtype"
    assert "torch_dtype" in crash.fix and "weight is float32 while its input is bfloat16" in crash.fix


def test_a_layer_on_another_device_is_not_a_dtype_pair() -> None:
    # the same dtype on two devices: a placement, not a cast
    line = (
        "RuntimeError: Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) "
        "should be the same"
    )
    assert dtype_pair_facts([line]) == {}
    assert diagnose_fallbacks_alone(f"{line}\n").evidence.fix_rule != PACK + "module_param_dtype"


def test_a_check_that_takes_a_boolean_names_the_bool_cast() -> None:
    crash = diagnose_fallbacks_alone(
        "RuntimeError: Expected key_padding_mask dtype to be bool or float, but got key_padding_mask.dtype: "
        "int instead.\n"
    )
    assert crash.evidence.fix_rule == PACK + "accepted_bool_dtype"
    assert "key_padding_mask.bool()" in crash.fix and "got int32" in crash.fix


def test_a_dtype_argument_that_takes_floats_names_a_float_dtype() -> None:
    crash = diagnose_fallbacks_alone(
        "ValueError: dtype argument to `truncated_normal` must be a float or complex dtype, got uint32\n"
    )
    assert crash.evidence.fix_rule == PACK + "accepted_float_dtype"
    assert "`truncated_normal`'s dtype argument" in crash.fix and "float dtype" in crash.fix


def test_a_matrix_type_check_without_a_dtype_argument_is_not_claimed() -> None:
    # names what it takes but no argument's dtype list: a release question, not a cast of a dtype argument
    assert (
        dtype_pair_facts(
            ["RuntimeError: Invalid argument: Type of the input matrix must be float: got c64[4,4]."]
        )
        == {}
    )


ROOTED = "unsupported_op/from_facts_rooted_collective"


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: scatter from the root rank is not yet implemented for this backend.",
        "NotImplementedError: reduce to root process is not supported by the TPU communicator",
        "NotImplementedError: collective_broadcast is not supported on TPU",
    ],
)
def test_a_rooted_collective_refused_names_the_symmetric_one(line: str) -> None:
    crash = diagnose_fallbacks_alone(f"{line}\n")
    assert crash.category == "unsupported_op"
    assert crash.evidence.fix_rule == ROOTED
    assert "all_gather_into_tensor" in crash.fix and "lax.psum" in crash.fix


@pytest.mark.parametrize(
    "line",
    [
        # a symmetric collective refused for its operand: no root to work around
        "NotImplementedError: all_gather is not implemented for sparse tensors on this backend",
        # a rooted collective that timed out: a hang, not a missing implementation
        "RuntimeError: gather to root rank 0 timed out after 300 seconds",
    ],
)
def test_other_collective_messages_are_not_rooted_refusals(line: str) -> None:
    assert diagnose_fallbacks_alone(f"{line}\n").evidence.fix_rule != ROOTED
