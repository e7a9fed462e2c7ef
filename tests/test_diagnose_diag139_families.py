"""Round diag139's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: Tensor.type() on an XLA tensor, jax's host_callback on a backend without an outfeed
receiver, and the CPU fallback of a linear-family interpolation's backward (`crash_rules/unsupported_op.yaml`;
docs/diagnose-accuracy.md, "Round diag139")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def test_tensor_type_on_xla_is_told_to_use_dtype() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 40, in step\n'
        "    mask = mask.type(logits.type())\n"
        "RuntimeError: Unimplemented backend XLA\n"
    )
    crash = assert_fixed_by(text, "unsupported_op", "xla_tensor_type_string", "dtype")
    assert "type_as" in crash.fix, crash.fix


def test_other_unimplemented_backends_are_not_claimed() -> None:
    # Another backend's missing type string, and XLA's own "Unimplemented" status, are other causes.
    for text in (
        "RuntimeError: Unimplemented backend Vulkan\n",
        "RuntimeError: Unimplemented: From /job:tpu_worker/replica:0/task:0:\n",
    ):
        assert_not_claimed(text, "xla_tensor_type_string")


def test_host_callback_without_an_outfeed_receiver_is_told_to_use_a_tpu_vm() -> None:
    text = (
        '  File "/opt/venv/lib/python3.9/site-packages/jax/experimental/host_callback.py", line 1410, in'
        " _initialize_outfeed_receiver\n"
        "    clients_with_outfeed = [c for c in clients if _use_outfeed(c.platform)]\n"
        "AttributeError: 'NoneType' object has no attribute 'add_outfeed'\n"
    )
    crash = assert_fixed_by(text, "unsupported_op", "host_callback_without_outfeed", "TPU VM")
    assert "jax.debug.print" in crash.fix, crash.fix


def test_other_missing_attributes_are_not_claimed() -> None:
    assert_not_claimed(
        "AttributeError: 'NoneType' object has no attribute 'add_callback'\n",
        "host_callback_without_outfeed",
    )


def metrics(*ops: str) -> str:
    """A PyTorch/XLA metrics report's counters for ops that fell back to the CPU (invented values)."""
    return "".join(f"Counter: {op}\n  Value: 24\n" for op in ops)


def test_bilinear_backward_fallback_is_told_to_upsample_with_nearest() -> None:
    text = metrics("aten::upsample_bicubic2d_backward", "aten::_local_scalar_dense")
    crash = assert_fixed_by(text, "unsupported_op", "interpolate_backward_cpu_fallback", "nearest")
    assert "ConvTranspose2d" in crash.fix, crash.fix


def test_nearest_backward_and_forward_fallbacks_are_not_claimed() -> None:
    # Telling a nearest-mode fallback to use nearest would be wrong; a forward-only fallback is not training.
    for op in ("aten::upsample_nearest2d_backward", "aten::upsample_bilinear2d"):
        assert_not_claimed(metrics(op), "interpolate_backward_cpu_fallback")
