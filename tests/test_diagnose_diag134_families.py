"""Round diag134's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: Mosaic's check that a custom-call operand's XLA layout is the one the kernel was
lowered for, and MLIR's verifier of a strided vector slice re-raised by Pallas
(`crash_rules/mosaic_compile_error.yaml`; docs/diagnose-accuracy.md, "Round diag134")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def kernel_call(message: str) -> str:
    """A jitted step whose Pallas TPU kernel fails to compile (an invented script and kernel)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/decode.py", line 57, in <module>\n'
        "    out = step(params, tokens)\n"
        '  File "/srv/job/kernels/gather_mm.py", line 140, in gather_mm\n'
        "    return pl.pallas_call(kernel, out_shape=out_shape, grid=grid)(x, w)\n"
        f"jax.errors.JaxRuntimeError: INVALID_ARGUMENT: {message}\n"
    )


def test_an_operand_layout_mismatch_names_the_operand_and_the_blockspec() -> None:
    # The wording names "128" and "layout", which the lane-dimension and relayout sub-rules also read: the
    # layout check's own fix comes first.
    text = kernel_call(
        "Mosaic failed to compile TPU kernel: Failed to verify layout for Mosaic kernel operand 1: XLA layout"
        " does not match MLIR layout for an operand of shape f32[24,1024]: expected {1,0:T(128)S(1)}, got"
        " {1,0:T(8,128)S(1)}"
    )
    crash = assert_fixed_by(text, "mosaic_compile_error", "operand_layout_mismatch", "BlockSpec")
    assert "(f32[24,1024])" in crash.fix, crash.fix
    assert "torch_xla[pallas]" in crash.fix, crash.fix


def test_the_mosaic_layout_wording_carries_the_suggested_block_shape() -> None:
    text = kernel_call(
        "Mosaic failed to compile TPU kernel: XLA layout ({1,0:T(8,128)(2,1)}) does not match Mosaic layout"
        " ({1,0:T(16,128)}) for an operand of shape bf16[64,256]. Try changing your kernel block shape to"
        " (16, 256)."
    )
    crash = assert_fixed_by(text, "mosaic_compile_error", "operand_layout_mismatch", "(16, 256)")
    assert "(bf16[64,256])" in crash.fix, crash.fix


def test_other_layout_messages_are_not_claimed_by_the_operand_check() -> None:
    # A relayout inside the kernel and a block against an operand's tiling are other checks.
    for message in (
        "Mosaic failed to compile TPU kernel: Not implemented: Unsupported layout change for"
        ' \'vector<8xi8>\': "8,{0,0},(1,512),-2" -> "8,{0,0},(8,128),-2"',
        "Mosaic failed to compile TPU kernel: Failed to set window params for input 0: Operand of shape"
        " (..., 256, 8192) has tiling (16, 128), but its block shape (..., 8, 8192) is not divisible by"
        " tiling evenly nor matches the full shape",
    ):
        assert_not_claimed(kernel_call(message), "operand_layout_mismatch")


def test_a_strided_vector_slice_is_sent_to_strided_loads_or_shifts() -> None:
    text = kernel_call(
        "Pallas encountered an internal verification error. Please file a bug at\n"
        "https://github.com/jax-ml/jax/issues. Error details:\n"
        "'vector.extract_strided_slice' op expected strides to be all ones"
    )
    crash = assert_fixed_by(text, "mosaic_compile_error", "strided_value_slice", "stride=2")
    assert "outside the kernel" in crash.fix, crash.fix


def test_other_strided_slice_checks_are_not_claimed() -> None:
    # The same op's offset check, and Mosaic's strided load of a 16-bit ref, are other faults.
    for message in (
        "Pallas encountered an internal verification error. Error details:\n"
        "'vector.extract_strided_slice' op expected offsets dimension 0 to be confined to [0, 8)",
        "Mosaic failed to compile TPU kernel: not implemented: Strided load with non 32-bit data",
    ):
        assert_not_claimed(kernel_call(message), "strided_value_slice")
