"""Round diag163's crash-rule fixes and weak cue, with wordings written here (not the corpus files) and
nearby wordings they must not claim: layouts asked for in a `Format` that XLA's layout validation refuses
(a tile of size 0) or that XLA compiles differently from the request, which jax refuses afterwards
(`crash_rules/xla_compile_error.yaml`, `crash_cues/compiler_checks.yaml`; docs/diagnose-accuracy.md,
"Round diag163")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed, diagnose_rules_alone

from tpu_runtime.diagnose.crash_cues import weak_vote


def layout_trace(message: str) -> str:
    """An ahead-of-time compile of an invented step whose output Format names a layout."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/export_step.py", line 23, in <module>\n'
        "    compiled = jax.jit(step, out_shardings=fmt).lower(params, batch).compile()\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/interpreters/pxla.py", line 1733,'
        " in from_hlo\n"
        "    xla_executable = _cached_compilation(\n"
        f"{message}\n"
    )


def test_a_zero_tile_size_is_sent_to_positive_tiles_naming_the_dimension_and_array() -> None:
    text = layout_trace(
        "jax.errors.JaxRuntimeError: INVALID_ARGUMENT: layout has invalid tiles: tile dimension 1 must be"
        " positive or kCombineDimension: bf16[8,512]"
    )
    crash = assert_fixed_by(text, "xla_compile_error", "layout_tile_not_positive", "Layout.AUTO")
    assert "(tile dimension 1)" in crash.fix and "bf16[8,512]" in crash.fix, crash.fix


def test_the_older_tile_wording_without_the_dimension_still_names_the_array() -> None:
    text = layout_trace("XlaRuntimeError: INVALID_ARGUMENT: layout has invalid tiles: s32[4,128]")
    crash = assert_fixed_by(text, "xla_compile_error", "layout_tile_not_positive", "tiling=")
    assert "s32[4,128]" in crash.fix and "tile dimension" not in crash.fix, crash.fix


def test_other_layout_validations_are_not_the_tile_fix() -> None:
    # XLA's check of a minor_to_major of the wrong length is the same validation, another field.
    text = layout_trace(
        "XlaRuntimeError: INVALID_ARGUMENT: layout minor_to_major field contains 1 elements, but shape is"
        " rank 3: {0}; shape: f32[2,3,4]"
    )
    assert_not_claimed(text, "layout_tile_not_positive")


OVERRIDE = (
    "AssertionError: Unexpected XLA layout override: (XLA) {xla} != {user} (User {side} layout)"
    " for type={aval}"
)


def test_a_sub_byte_size_on_a_wide_type_is_sent_to_leaving_it_unset() -> None:
    text = layout_trace(
        OVERRIDE.format(
            xla="Layout(major_to_minor=(0,), sub_byte_element_size_in_bits=0)",
            user="Layout(major_to_minor=(0,), sub_byte_element_size_in_bits=2)",
            side="input",
            aval="bfloat16[64]",
        )
    )
    crash = assert_fixed_by(text, "xla_compile_error", "layout_override_sub_byte_size", "unset (0)")
    assert crash.fix.startswith("The input Format") and "bfloat16[64]" in crash.fix, crash.fix


def test_another_overridden_layout_names_both_layouts_and_not_the_sub_byte_fix() -> None:
    # An int4 array keeps its sub-byte size on both sides; the order differs, which is the general case.
    xla = "Layout(major_to_minor=(1, 0), sub_byte_element_size_in_bits=4)"
    user = "Layout(major_to_minor=(0, 1), sub_byte_element_size_in_bits=4)"
    text = layout_trace(OVERRIDE.format(xla=xla, user=user, side="output", aval="int4[32,32]"))
    crash = assert_fixed_by(text, "xla_compile_error", "layout_override", "compiled.output_formats")
    assert xla in crash.fix and user in crash.fix, crash.fix
    assert_not_claimed(text, "layout_override_sub_byte_size")


def test_a_mosaic_operand_layout_refusal_is_not_an_overridden_format() -> None:
    # Mosaic's own comparison of an operand's XLA layout with the kernel's is a kernel compile refusal.
    text = (
        "jax.errors.JaxRuntimeError: INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: Failed to verify"
        " layout for Mosaic kernel operand 2: XLA layout ({0:T(128)}) does not match Mosaic layout"
        " ({0:T(256)}) for an operand of shape s32[512].\n"
    )
    for sub_rule in ("layout_override", "layout_override_sub_byte_size", "layout_tile_not_positive"):
        assert_not_claimed(text, sub_rule)
    assert diagnose_rules_alone(text).category != "xla_compile_error"


def test_the_weak_cue_reads_a_refused_or_overridden_layout_as_a_compile_error() -> None:
    # The arrays' types in these messages would otherwise lean to two operands that disagree.
    for message in (
        "XlaRuntimeError: INVALID_ARGUMENT: layout has invalid tiles: tile dimension 0 must be positive or"
        " kCombineDimension: f32[128,256]",
        OVERRIDE.format(
            xla="Layout(major_to_minor=(0,))",
            user="Layout(major_to_minor=(0,), tiling=((1024,),))",
            side="output",
            aval="float32[4096]",
        ),
    ):
        text = layout_trace(message)
        vote = weak_vote(text.splitlines())
        assert vote is not None and vote.category == "xla_compile_error", vote
        assert ablated_verdict(text)[0] == "xla_compile_error"
