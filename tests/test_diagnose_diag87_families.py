"""Round diag87's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a batch size that must split evenly is a shape error, not a start-up refusal; a buffer
set up for one size and handed a tensor of another is a shape error told to set the buffer up again; and a
model library's own check that its tensors share one dtype is told to load every component with one
torch_dtype (docs/diagnose-accuracy.md, "Round diag87")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, library_trace

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_batch_size_that_must_split_evenly_is_a_shape_error() -> None:
    for message in (
        "ValueError: rollout_batch_size (30) must be divisible by group_size (8).",
        "ValueError: Global batch size 96 should be divisible by the micro batch count.",
        "AssertionError: per_device_eval_batch_size must be evenly divisible by num_beams",
    ):
        assert _cue(message) == "shape_dtype_error", message
        assert ablated_verdict(library_trace(message))[0] == "shape_dtype_error", message
    # a parallelism degree that must divide the world is a start-up refusal, and a batch size merely
    # reported, or one that must be positive, says nothing of how the batch splits
    assert _cue("ValueError: tensor_parallel_size (8) must be divisible by num_kv_heads (6).") != (
        "shape_dtype_error"
    )
    assert _cue("INFO: batch size 96 divisible by 8 devices; 12 per device") is None
    assert _cue("ValueError: train_batch_size must be positive, got 0") != "shape_dtype_error"


def test_a_buffer_set_up_for_one_size_is_told_to_be_set_up_again() -> None:
    message = (
        "ValueError: The state buffer was allocated with a sequence length of 2048, but got a chunk with "
        "sequence length 4096."
    )
    assert _cue(message) == "shape_dtype_error"
    category, rule, fix = ablated_verdict(library_trace(message))
    assert category == "shape_dtype_error"
    assert rule.endswith("/from_facts_buffer_set_up_for_other_size")
    assert "Set it up again" in fix and "pad" in fix
    other = "RuntimeError: the workspace was initialized for a batch size of 4 but received inputs of size 16"
    assert _cue(other) == "shape_dtype_error"
    # a buffer set up at the size it is given, or a size reported at set-up, is no disagreement
    assert _cue("INFO: KV cache set up with a batch size of 8 for 4096 positions") is None
    assert (
        ablated_verdict(library_trace("ValueError: cache setup failed: max_seq_len is required"))[1]
        != "shape_dtype_error/from_facts_buffer_set_up_for_other_size"
    )


def test_a_model_library_check_of_one_dtype_names_torch_dtype() -> None:
    message = "ValueError: Hidden states and the encoder output must have the same dtype."
    category, rule, fix = ablated_verdict(library_trace(message, package="transformers"))
    assert category == "shape_dtype_error"
    assert rule.endswith("/from_facts_model_library_mixed_dtype")
    assert "torch_dtype" in fix and "bfloat16" in fix
    dispatch = "ValueError: query and value dtypes do not match in the attention processor"
    assert ablated_verdict(library_trace(dispatch, package="diffusers"))[1].endswith(
        "/from_facts_model_library_mixed_dtype"
    )
    # the same wording from a library that loads no pretrained model, or from the user's own script, is two
    # operands of one op: the generic dtype fallback, not the loading advice
    elsewhere = ablated_verdict(library_trace(message, package="invented_trainer"))[1]
    assert elsewhere != "shape_dtype_error/from_facts_model_library_mixed_dtype"
    script = (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 40, in <module>\n'
        "    check(q, k)\n"
        f"{message}\n"
    )
    assert ablated_verdict(script)[1] != "shape_dtype_error/from_facts_model_library_mixed_dtype"
