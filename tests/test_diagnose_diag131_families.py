"""Round diag131's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: nn.MultiheadAttention given an attn_mask of another size than the call's query and key
(`crash_rules/shape_dtype_error.yaml`, `crash_fix_packs/shape_dtype_error.yaml`; docs/diagnose-accuracy.md,
"Round diag131")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def mha_trace(message: str) -> str:
    """nn.MultiheadAttention's forward raising from torch.nn.functional (invented script and paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/decoder.py", line 41, in forward\n'
        "    h, _ = self.self_attn(x, x, x, attn_mask=self.causal_mask)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/activation.py", line 1494,'
        " in forward\n"
        "    attn_output, attn_output_weights = F.multi_head_attention_forward(\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 6908, in'
        " multi_head_attention_forward\n"
        "    raise RuntimeError(\n"
        f"RuntimeError: {message}\n"
    )


def test_a_2d_mask_of_another_length_names_both_shapes_and_a_mask_built_per_call() -> None:
    text = mha_trace("The shape of the 2D attn_mask is torch.Size([512, 512]), but should be (77, 77).")
    crash = assert_fixed_by(
        text, "shape_dtype_error", "from_facts_attn_mask_shape", "generate_square_subsequent_mask"
    )
    assert "[512, 512]" in crash.fix, crash.fix
    assert "(77, 77)" in crash.fix, crash.fix
    assert "2-D attn_mask" in crash.fix, crash.fix


def test_a_3d_mask_is_told_to_repeat_per_head() -> None:
    text = mha_trace("The shape of the 3D attn_mask is torch.Size([4, 20, 20]), but should be (32, 20, 20).")
    crash = assert_fixed_by(text, "shape_dtype_error", "from_facts_attn_mask_shape", "repeat_interleave")
    assert "[4, 20, 20]" in crash.fix, crash.fix
    assert "3-D attn_mask" in crash.fix, crash.fix


def test_other_attention_mask_checks_are_not_claimed() -> None:
    # a mask of a rank the layer does not take, and scaled_dot_product_attention's broadcast of a mask of
    # the wrong length: neither prints the shape the layer needs
    for message in (
        "attn_mask's dimension 4 is not supported",
        "The size of tensor a (16) must match the size of tensor b (17) at non-singleton dimension 3",
    ):
        assert_not_claimed(mha_trace(message), "from_facts_attn_mask_shape")
