"""Round diag116's general mechanism, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a normalization layer built for another width than the tensor it normalises
(`crash_fix_packs/shape_dtype_error.yaml`, `from_facts_norm_width`; docs/diagnose-accuracy.md, "Round
diag116")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def torch_trace(message: str) -> str:
    """A traceback from a model's forward whose last frames are torch's layer norm (an invented model)."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/srv/job/encoder.py", line 88, in forward',
        "    h = self.final_norm(h)",
        '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/normalization.py", line 217, in '
        "forward",
        "    return F.layer_norm(",
        '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/functional.py", line 2910, in layer_norm',
        "    return torch.layer_norm(",
        message,
    ]
    return "\n".join(frames) + "\n"


NORM_WIDTHS = (
    # the eager wording, one and two normalised dimensions
    (
        "RuntimeError: Given normalized_shape=[768], expected input with shape [*, 768], but got input of "
        "size[4, 196, 1024]",
        "[768]",
        "[4, 196, 1024]",
    ),
    (
        "RuntimeError: Given normalized_shape=[16, 512], expected input with shape [*, 16, 512], but got "
        "input of size[2, 16, 256]",
        "[16, 512]",
        "[2, 16, 256]",
    ),
    # older releases (no comma after the star) and a traced call (torch.Size)
    (
        "RuntimeError: Given normalized_shape=[2560], expected input with shape [*2560], but got input of "
        "size[2, 77, 768]",
        "[2560]",
        "[2, 77, 768]",
    ),
    (
        "RuntimeError: Given normalized_shape=[60], expected input with shape [60], but got input of size "
        "torch.Size([2, 5])",
        "[60]",
        "[2, 5]",
    ),
)


def test_a_norm_built_for_another_width_is_told_to_use_the_hidden_size() -> None:
    for message, norm, got in NORM_WIDTHS:
        text = torch_trace(message)
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == ("shape_dtype_error", "shape_dtype_error/from_facts_norm_width"), text
        assert norm in fix and got in fix, fix
        assert "hidden_size" in fix
        named = "nn.LayerNorm(config.hidden_size)"
        assert_fixed_by(text, "shape_dtype_error", "from_facts_norm_width", named)


def test_other_normalization_and_width_errors_are_not_claimed() -> None:
    for message in (
        # the norm's own weight loaded with another size: the checkpoint, not the input, is off
        "RuntimeError: Expected weight to be of same shape as normalized_shape, but got weight of shape "
        "[1024] and normalized_shape = [4096]",
        # group norm's channel check
        "RuntimeError: Expected weight to be a vector of size equal to the number of channels in input, but "
        "got weight of shape [64] and input of shape [8, 32, 16, 16]",
        # a convolution given NHWC input
        "RuntimeError: Given groups=1, weight of size [64, 3, 3, 3], expected input[8, 224, 224, 3] to have "
        "3 channels, but got 224 channels instead",
    ):
        assert_not_claimed(torch_trace(message), "from_facts_norm_width")
