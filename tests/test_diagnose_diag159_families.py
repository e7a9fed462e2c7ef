"""Round diag159's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a compiled executable handed an argument of the same kind and another width, as when jax's x64
mode changes between tracing and the call (`crash_rules/shape_dtype_error.yaml`; docs/diagnose-accuracy.md,
"Round diag159")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def host_shape_refusal(want: str, got: str) -> str:
    """A jitted call refused by PJRT's argument check (invented script, shapes and line numbers)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/score.py", line 58, in <module>\n'
        "    scores = score_fn(table)\n"
        "RuntimeError: Invalid argument: Argument does not match host shape or layout of computation"
        f" parameter 1: want {want}{{1,0}}, got {got}{{1,0}}\n"
    )


def test_int64_for_an_int32_parameter_names_both_and_the_x64_switch() -> None:
    crash = assert_fixed_by(
        host_shape_refusal("s32[64,512]", "s64[64,512]"),
        "shape_dtype_error",
        "host_argument_x64_width_differs",
        "jax_enable_x64",
    )
    assert "wants s32[64,512] and got s64[64,512]" in crash.fix, crash.fix


def test_float32_for_a_float64_parameter_gets_the_same_fix() -> None:
    assert_fixed_by(
        host_shape_refusal("f64[10,3]", "f32[10,3]"),
        "shape_dtype_error",
        "host_argument_x64_width_differs",
        "JAX_ENABLE_X64",
    )


def test_a_parameter_of_another_shape_is_not_claimed() -> None:
    # Same dtype, another batch size: a shape change, not the x64 switch.
    assert_not_claimed(host_shape_refusal("f32[8,128]", "f32[16,128]"), "host_argument_x64_width_differs")


def test_a_parameter_of_another_kind_is_not_claimed() -> None:
    # bfloat16 against float32 is a cast the model makes, not a width the x64 mode picks.
    assert_not_claimed(host_shape_refusal("bf16[8,128]", "f32[8,128]"), "host_argument_x64_width_differs")
