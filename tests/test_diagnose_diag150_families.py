"""Round diag150's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a checkpoint tensor that does not fit the parameter the model's config built
(accelerate's set_module_tensor_to_device), and XLA's concatenate given two integer element types
(`crash_rules/shape_dtype_error.yaml`; docs/diagnose-accuracy.md, "Round diag150")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def loading_trace(message: str) -> str:
    """A from_pretrained call failing while it copies checkpoint tensors in (invented script and shapes)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/serve.py", line 21, in <module>\n'
        "    model = AutoModelForCausalLM.from_pretrained(path, device_map='auto')\n"
        '  File "/opt/venv/lib/python3.12/site-packages/accelerate/utils/modeling.py", line 286, in'
        " set_module_tensor_to_device\n"
        "    raise ValueError(\n"
        f"ValueError: {message}\n"
    )


def test_a_checkpoint_tensor_of_another_width_names_both_shapes_and_the_saved_config() -> None:
    text = loading_trace(
        'Trying to set a tensor of shape torch.Size([32000, 2048]) in "weight" (which has shape'
        " torch.Size([32000, 4096])), this looks incorrect."
    )
    rule = "checkpoint_tensor_shape_vs_built_parameter"
    crash = assert_fixed_by(text, "shape_dtype_error", rule, "config.json")
    assert "torch.Size([32000, 2048])" in crash.fix and "torch.Size([32000, 4096])" in crash.fix, crash.fix
    assert "ignore_mismatched_sizes" in crash.fix, crash.fix


def test_the_older_spelling_of_the_check_is_read_too() -> None:
    text = loading_trace(
        'Trying to set a tensor of shape torch.Size([768]) in "bias" (which has shape torch.Size([1024])),'
        " this look incorrect."
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "checkpoint_tensor_shape_vs_built_parameter", '"bias"')
    assert "torch.Size([1024])" in crash.fix, crash.fix


def test_a_tensor_on_the_meta_device_without_a_value_is_not_claimed() -> None:
    # The same function's other refusal: no shapes to compare, not a checkpoint of another model.
    assert_not_claimed(
        loading_trace("weight is on the meta device, we need a `value` to put in on 0."),
        "checkpoint_tensor_shape_vs_built_parameter",
    )


def indexing_trace(message: str) -> str:
    """An advanced-indexing call on an XLA tensor failing when its graph is built (invented script)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/mask.py", line 30, in build\n'
        "    picked = scores[rows, cols]\n"
        f"RuntimeError: {message}\n"
    )


def test_two_integer_element_types_in_a_concatenate_name_both_and_the_int64_cast() -> None:
    text = indexing_trace("Cannot concatenate arrays with different element types: S32 vs S64.")
    crash = assert_fixed_by(text, "shape_dtype_error", "concatenate_integer_element_types", "idx.long()")
    assert "S32 meets S64" in crash.fix, crash.fix


def test_a_float_pair_in_a_concatenate_keeps_the_general_element_type_fix() -> None:
    # Two float widths are not index tensors: the cast to int64 would be wrong there.
    assert_not_claimed(
        indexing_trace("Cannot concatenate arrays with different element types: F32 vs BF16."),
        "concatenate_integer_element_types",
    )
