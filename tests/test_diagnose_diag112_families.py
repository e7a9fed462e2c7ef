"""Round diag112's general mechanism, with wordings written here (not the corpus files) and nearby
wordings it must not claim: PyTorch's checks that an op argument has one of the scalar types the op takes,
or that two operands share one dtype, are dtype errors, not missing features
(`crash_cues/framework_vocabularies.yaml`; docs/diagnose-accuracy.md, "Round diag112")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote

LABEL = "an argument of a scalar type the op refuses, or two operands of different dtypes (PyTorch's checks)"


def torch_trace(message: str) -> str:
    """A traceback from an eager PyTorch forward whose last frame is torch's own (invented model and path)."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/srv/job/finetune.py", line 88, in <module>',
        "    loss = model(batch)",
        '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1789, in _call',
        "    return forward_call(*args, **kwargs)",
        message,
    ]
    return "\n".join(frames) + "\n"


DTYPE_CHECKS = (
    torch_trace(
        "RuntimeError: Expected tensor for argument #2 'index' to have the following scalar type: Long;"
        " but got torch.IntTensor instead (while checking arguments for gather_out)"
    ),
    torch_trace(
        "RuntimeError: Expected tensor for argument #1 'input_ids' to have one of the following scalar types:"
        " Long, Int; but got torch.HalfTensor instead (while checking arguments for embedding_bag)"
    ),
    torch_trace("RuntimeError: self and mat2 must have the same dtype, but got Half and Float"),
)


def test_a_torch_argument_or_operand_dtype_check_is_a_dtype_error() -> None:
    for text in DTYPE_CHECKS:
        vote = weak_vote(text.splitlines(), final=False)
        assert vote is not None and vote.category == "shape_dtype_error", (vote, text)
        assert LABEL in vote.labels
        category, _, _ = ablated_verdict(text)
        assert category == "shape_dtype_error", text


def test_nearby_wordings_are_not_read_as_a_dtype_check() -> None:
    for text in (
        # a backend that lacks a dtype altogether: a missing feature, not an operand of the wrong dtype
        torch_trace("RuntimeError: The following scalar types are not supported on this chip: ComplexDouble"),
        # the same words about something other than a dtype
        torch_trace("RuntimeError: all ranks must have the same number of devices, got 4 and 8"),
        # a dtype named in a setting, no operand check
        torch_trace("ValueError: mixed_precision must have the value 'bf16' or 'no' on TPU"),
    ):
        vote = weak_vote(text.splitlines(), final=False)
        assert vote is None or LABEL not in vote.labels, (vote, text)
