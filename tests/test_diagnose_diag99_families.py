"""Round diag99's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a call that states the rank it takes got a tensor of another rank (reshape or flatten it
to that rank; `shape_dtype_error/from_facts_required_rank`), and a loop over the leading dimension got inputs
whose leading sizes differ (put the stepped axis first; `shape_dtype_error/from_facts_scan_leading_length`)
(docs/diagnose-accuracy.md, "Round diag99")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

RANK_STATED = (
    "AssertionError: x must be a 3d, torch.Tensor with shape [batch, seq, dim]",
    "ValueError: the router logits should have 2 dimensions (tokens, experts), got torch.Size([4, 512, 8])",
    "RuntimeError: expected a 2D tensor for the expert input but got a 3D tensor of shape [8, 1024, 4096]",
)


def test_a_stated_rank_is_fixed_by_reshaping_to_it() -> None:
    for line in RANK_STATED:
        crash = assert_fixed_by(line + "\n", "shape_dtype_error", "from_facts_required_rank", "reshape(-1")
        assert "unsqueeze" in crash.fix


def test_ranks_and_dims_that_state_no_tensor_rank_are_not_claimed() -> None:
    for line in (
        # a mesh's shape, not an operand's rank
        "ValueError: the device mesh must be a 2d grid of chips, got (8,)",
        # a count of devices, not of dimensions
        "RuntimeError: the slice must have 4 devices per host, found 8",
        # a convolution's own check keeps its cause-specific reading
        "RuntimeError: Expected 4-dimensional input for 4-dimensional weight [64, 3, 7, 7], but got "
        "3-dimensional input of size [3, 224, 224] instead",
    ):
        assert_not_claimed(line + "\n", "from_facts_required_rank")


LEADING_MISMATCH = (
    "ValueError: every input of the loop must have the same leading dimension size, got 24 and 12",
    "RuntimeError: stacked layer weights have inconsistent leading axis sizes: "
    "shapes (32, 4096) and (16, 4096)",
    "ValueError: leading dimension lengths of xs do not match (128 != 64)",
)


def test_inputs_with_different_leading_sizes_put_the_stepped_axis_first() -> None:
    for line in LEADING_MISMATCH:
        crash = assert_fixed_by(
            line + "\n", "shape_dtype_error", "from_facts_scan_leading_length", "transpose"
        )
        assert "leading dimension" in crash.fix


def test_leading_dimension_words_without_a_mismatch_are_not_claimed() -> None:
    for line in (
        # a divisibility check on one leading dimension, not two inputs that disagree
        "ValueError: the leading dimension size 30 must be divisible by the number of devices 8",
        # a whitespace check
        "SyntaxError: inconsistent leading whitespace in the docstring of train_step",
        # the same phrase in progress output
        "INFO scanning 48 layers over the leading axis (size 48)",
    ):
        assert_not_claimed(line + "\n", "from_facts_scan_leading_length")
