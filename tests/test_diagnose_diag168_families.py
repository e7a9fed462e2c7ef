"""Round diag168's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: torch.cat of tensors that differ off the joined dimension, torch.stack of tensors of two
shapes, and a loss's class index out of bounds (`crash_rules/shape_dtype_error.yaml`;
docs/diagnose-accuracy.md, "Round diag168")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed, diagnose_rules_alone


def torch_trace(message: str, call: str = "batch = collate(items)") -> str:
    """A training script's call failing in a torch op (invented script and frames)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 88, in <module>\n'
        "    loss = step(model, items)\n"
        '  File "/srv/job/train.py", line 61, in step\n'
        f"    {call}\n"
        f"{message}\n"
    )


def test_cat_sizes_off_the_joined_dim_name_the_tensor_and_pad() -> None:
    text = torch_trace(
        "RuntimeError: Sizes of tensors must match except in dimension 0. Expected size 64 but got size 48"
        " for tensor number 2 in the list.",
        call="feats = torch.cat([a, b, c], dim=0)",
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "cat_sizes_differ_off_dim", "F.pad")
    assert "tensor number 2" in crash.fix and "size 48" in crash.fix and "dim 0" in crash.fix, crash.fix


def test_a_broadcast_size_mismatch_is_not_claimed_by_the_cat_fix() -> None:
    # Elementwise broadcasting of two sizes, not a concatenation.
    text = torch_trace(
        "RuntimeError: The size of tensor a (64) must match the size of tensor b (48) at non-singleton"
        " dimension 1",
        call="out = a + b",
    )
    assert diagnose_rules_alone(text).category == "shape_dtype_error"
    assert_not_claimed(text, "cat_sizes_differ_off_dim")


def test_stack_of_two_shapes_names_both_entries_and_pad_sequence() -> None:
    text = torch_trace(
        "RuntimeError: stack expects each tensor to be equal size, but got [3, 224, 224] at entry 0 and"
        " [1, 224, 224] at entry 5"
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "stack_sizes_differ", "pad_sequence")
    assert "entry 5 is [1, 224, 224]" in crash.fix and "entry 0 is [3, 224, 224]" in crash.fix, crash.fix


def test_stack_of_an_empty_list_is_not_claimed() -> None:
    # An empty batch is a data-loading fault, not tensors of two shapes.
    text = torch_trace("RuntimeError: stack expects a non-empty TensorList")
    assert_not_claimed(text, "stack_sizes_differ")


def test_a_negative_target_names_it_and_ignore_index() -> None:
    text = torch_trace("IndexError: Target -1 is out of bounds.", call="loss = F.nll_loss(logp, labels)")
    crash = assert_fixed_by(text, "shape_dtype_error", "class_index_out_of_range", "ignore_index")
    assert "(target -1)" in crash.fix and "num_labels" in crash.fix, crash.fix


def test_an_index_past_a_dimension_keeps_its_own_fix() -> None:
    # A plain indexing error names the index and the size; it is no loss target.
    text = torch_trace(
        "IndexError: index 12 is out of bounds for dimension 0 with size 10", call="row = table[ids]"
    )
    assert_not_claimed(text, "class_index_out_of_range")
