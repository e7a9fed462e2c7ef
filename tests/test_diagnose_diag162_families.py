"""Round diag162's crash-rule fix and cue, with wordings written here (not the corpus files) and nearby
wordings they must not claim: an attention layer whose head count does not divide the hidden (embedding) size
(`crash_rules/shape_dtype_error.yaml`, `crash_cues/refusal_families.yaml`; docs/diagnose-accuracy.md,
"Round diag162")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed

SUB_RULE = "hidden_size_not_divisible_by_heads"


def model_build(message: str) -> str:
    """A model built from a config whose sizes a layer refuses (invented script, paths and line numbers)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/port/build.py", line 21, in <module>\n'
        "    model = AutoModelForCausalLM.from_config(cfg)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/some_models/attention.py", line 77, in __init__\n'
        "    raise ValueError(\n"
        f"{message}\n"
    )


def test_a_config_check_names_both_sizes_and_the_head_count_to_change() -> None:
    crash = assert_fixed_by(
        model_build(
            "ValueError: The hidden size (1000) is not a multiple of the number of attention heads (12)"
        ),
        "shape_dtype_error",
        SUB_RULE,
        "num_attention_heads",
    )
    assert "1000 does not split into 12 heads" in crash.fix, crash.fix


def test_the_backticked_embed_dim_wording_gets_the_same_fix() -> None:
    crash = assert_fixed_by(
        model_build(
            "ValueError: `embed_dim` must be divisible by num_heads"
            " (got `embed_dim`: 770 and `num_heads`: 12)."
        ),
        "shape_dtype_error",
        SUB_RULE,
        "n_head",
    )
    assert "770 does not split into 12 heads" in crash.fix, crash.fix


def test_the_bare_assertion_of_a_torch_attention_layer_is_claimed_without_numbers() -> None:
    crash = assert_fixed_by(
        model_build("AssertionError: embed_dim must be divisible by num_heads"),
        "shape_dtype_error",
        SUB_RULE,
        "num_heads",
    )
    assert "does not split into" not in crash.fix, crash.fix


def test_the_cue_alone_places_the_head_split_among_shape_errors() -> None:
    # With the patterns and sub-rules removed (as --ablate scores), the weak cue still reads the wording.
    category, _, _ = ablated_verdict(model_build("ValueError: `d_model` must be divisible by n_heads"))
    assert category == "shape_dtype_error", category


def test_a_head_count_over_tensor_parallel_ranks_is_not_claimed() -> None:
    # The heads split over devices: a parallelism setting, not the layer's own shape.
    assert_not_claimed(
        model_build(
            "ValueError: Total number of attention heads (12) must be divisible by tensor parallel size (8)."
        ),
        SUB_RULE,
    )


def test_a_parallel_size_that_must_divide_the_kv_heads_is_not_claimed() -> None:
    assert_not_claimed(model_build("ValueError: tp_size 8 must be divisible by num_kv_heads 6"), SUB_RULE)


def test_a_hidden_size_over_a_mesh_axis_is_not_claimed() -> None:
    # A sharding's divisibility names no head count.
    assert_not_claimed(
        model_build(
            "ValueError: hidden size 4098 must be divisible by the number of devices on axis 'model' (4)"
        ),
        SUB_RULE,
    )
