"""Round diag137's crash-rule fixes, with wordings written here (not the corpus files) and nearby
wordings they must not claim: haliax naming an array with axes of other sizes, and PyTorch's
convolution check that the input has the dtype of the weight and bias
(`crash_rules/shape_dtype_error.yaml`, `crash_fix_packs/shape_dtype_error.yaml`,
`crash_cues/framework_vocabularies.yaml`; docs/diagnose-accuracy.md, "Round diag137")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def haliax_trace(message: str) -> str:
    """A levanter start-up traceback raising from haliax's check_shape (invented script and paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/finetune.py", line 88, in main\n'
        "    model = converter.load_pretrained(config.model_type, ref=ckpt)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/haliax/core.py", line 1170, in named\n'
        "    axes = check_shape(a.shape, axis)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/haliax/core.py", line 1402, in check_shape\n'
        '    raise ValueError(f"Shape mismatch: jnp_shape={jnp_shape} hax_axes={hax_axes}")\n'
        f"ValueError: {message}\n"
    )


def conv_trace(message: str) -> str:
    """A torch forward raising from a convolution's dtype check (invented script and paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/sample.py", line 30, in <module>\n'
        "    out = model(batch)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/conv.py", line 543,'
        " in _conv_forward\n"
        "    return F.conv2d(\n"
        f"RuntimeError: {message}\n"
    )


def test_a_haliax_shape_mismatch_names_the_array_and_the_axes_and_the_checkpoint_config() -> None:
    text = haliax_trace(
        "Shape mismatch: jnp_shape=(32, 4096, 4096) hax_axes=(Axis(name='layers', size=16), "
        "Axis(name='embed', size=2048), Axis(name='mlp', size=8192))"
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "from_facts_haliax_named_shape", "use_hf_model_config")
    assert "(32, 4096, 4096)" in crash.fix, crash.fix
    assert "Axis(name='layers', size=16)" in crash.fix, crash.fix
    # the general fallbacks alone (as --ablate scores) keep the fix
    assert ablated_verdict(text)[1] == "shape_dtype_error/from_facts_haliax_named_shape"


def test_other_shape_mismatch_wordings_are_not_claimed() -> None:
    # einops' rearrange and a bare "Shape mismatch" print no haliax axes for the fix to name
    for message in (
        "Shape mismatch, can't divide axis of length 3 in chunks of 2",
        "Shape mismatch: expected (4, 8) got (4, 9)",
    ):
        assert_not_claimed(haliax_trace(message), "from_facts_haliax_named_shape")


def test_a_float_input_to_a_half_conv_is_a_dtype_error_even_without_the_rules() -> None:
    text = conv_trace("Input type (float) and bias type (c10::BFloat16) should be the same")
    crash = assert_fixed_by(text, "shape_dtype_error", "weight_input_types", "torch_dtype")
    assert "x.to(model.dtype)" in crash.fix, crash.fix
    assert ablated_verdict(text)[0] == "shape_dtype_error"


def test_a_kernel_missing_for_half_is_not_taken_for_a_dtype_mismatch() -> None:
    # an op with no kernel for the dtype at all: no second operand's type to agree with
    text = conv_trace("\"slow_conv2d_cpu\" not implemented for 'Half'")
    assert_not_claimed(text, "weight_input_types")
