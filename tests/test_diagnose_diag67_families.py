"""Families of wording that round diag67 added to the rules: more of MaxText's configuration validators.

MaxText (https://github.com/AI-Hypercomputer/maxtext, `src/maxtext/configs/types.py`) refuses a pipeline whose
stages times layers per stage do not divide the pipelined layers (`maxtext_pipeline_layers_per_stage`), a
streaming DiLoCo split the decoder layers do not divide (`maxtext_streaming_diloco_fragments`) or streaming
without DiLoCo (`maxtext_streaming_diloco_needs_diloco`), both load paths at once
(`maxtext_load_parameters_or_full_state`), the batch-split schedule with another quantization
(`maxtext_batch_split_quantization`), DPO or ORPO with packing (`maxtext_dpo_packing`), multimodal on a model
outside its list (`maxtext_multimodal_model_list`) and multimodal SFT on the whole sequence
(`maxtext_multimodal_sft_completion_only`).

Each case is another wording of its family (other values, under a traceback or as pydantic wraps it), and each
family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import MAXTEXT_TRACE, assert_fixed_by, assert_not_claimed, maxtext_pydantic


def test_a_pipeline_of_four_stages_of_two_layers_over_thirty_layers() -> None:
    crash = assert_fixed_by(
        MAXTEXT_TRACE
        + "AssertionError: The number of layers per stage (2) times the number of stages (4) must "
        "divide the number of pipeline_parallel_layers which defaults to decoder layers (30) ",
        "runtime_init_failure",
        "maxtext_pipeline_layers_per_stage",
        "ici_pipeline_parallelism",
    )
    assert "4 stages of 2 layer(s) do not divide 30 layers" in (crash.fix or "")


def test_the_microbatch_check_is_not_the_layers_per_stage_check() -> None:
    assert_not_claimed(
        "AssertionError: The number of microbatches (6) must be divisible by the number of stages (4)",
        "maxtext_pipeline_layers_per_stage",
    )


def test_a_streaming_diloco_split_of_forty_layers_into_three() -> None:
    crash = assert_fixed_by(
        maxtext_pydantic(
            "The number of decoder layers (40) must be divisible by (num_diloco_fragments - 1) (3) when "
            "enable_streaming_diloco is True."
        ),
        "runtime_init_failure",
        "maxtext_streaming_diloco_fragments",
        "num_diloco_fragments",
    )
    assert "divides 40" in (crash.fix or "")


def test_too_few_diloco_fragments_is_not_the_layer_split() -> None:
    assert_not_claimed(
        "ValueError: num_diloco_fragments (1) must be at least 2 when enable_streaming_diloco is True (1 for "
        "non-scanned parameters, at least 1 for scanned layers).",
        "maxtext_streaming_diloco_fragments",
    )


def test_streaming_without_diloco_as_pydantic_wraps_it() -> None:
    assert_fixed_by(
        maxtext_pydantic("enable_diloco must be True when enable_streaming_diloco is True."),
        "runtime_init_failure",
        "maxtext_streaming_diloco_needs_diloco",
        "enable_diloco=True",
    )


def test_unspecified_fragments_is_not_the_diloco_switch() -> None:
    assert_not_claimed(
        "ValueError: num_diloco_fragments must be specified when enable_streaming_diloco is True.",
        "maxtext_streaming_diloco_needs_diloco",
    )


def test_both_load_paths_without_backquotes() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE
        + "ValueError: At most one of load_parameters_path or load_full_state_path should be set.",
        "runtime_init_failure",
        "maxtext_load_parameters_or_full_state",
        "load_full_state_path",
    )


def test_a_missing_load_path_is_not_the_two_paths_check() -> None:
    assert_not_claimed(
        "ValueError: Either load_parameters_path or lora_restore_path must be specified.",
        "maxtext_load_parameters_or_full_state",
    )


def test_batch_split_with_another_mode_named() -> None:
    crash = assert_fixed_by(
        maxtext_pydantic("Batch split quantization only supports `quantization=fp8_full`"),
        "runtime_init_failure",
        "maxtext_batch_split_quantization",
        "use_batch_split_schedule=False",
    )
    assert "quantization=fp8_full" in (crash.fix or "")


def test_fp8_with_gradient_accumulation_is_not_the_batch_split_check() -> None:
    assert_not_claimed(
        "ValueError: FP8 quantization is not compatible with gradient accumulation.",
        "maxtext_batch_split_quantization",
    )


def test_dpo_packing_under_a_traceback() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: For DPO/ORPO, `packing` is not supported.",
        "runtime_init_failure",
        "maxtext_dpo_packing",
        "packing=False",
    )


def test_block_diffusion_packing_is_not_the_dpo_check() -> None:
    assert_not_claimed(
        "ValueError: `training_objective='block_diffusion'` requires `packing=False`.", "maxtext_dpo_packing"
    )


def test_multimodal_on_another_model() -> None:
    crash = assert_fixed_by(
        maxtext_pydantic("Multimodal is only supported for ('gemma3-4b', 'qwen3-vl-4b'), not mistral-7b"),
        "runtime_init_failure",
        "maxtext_multimodal_model_list",
        "use_multimodal=False",
    )
    assert "mistral-7b" in (crash.fix or "")


def test_multimodal_under_ring_attention_is_not_the_model_list() -> None:
    assert_not_claimed(
        "ValueError: TPU Tokamax ring attention does not support multimodal attention.",
        "maxtext_multimodal_model_list",
    )


def test_multimodal_sft_on_the_whole_sequence_without_backquotes() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: For multimodal SFT, sft_train_on_completion_only must be True.",
        "runtime_init_failure",
        "maxtext_multimodal_sft_completion_only",
        "sft_train_on_completion_only=True",
    )


def test_multimodal_sft_packing_is_not_the_completion_check() -> None:
    assert_not_claimed(
        "ValueError: For multimodal SFT, `packing` is not yet supported.",
        "maxtext_multimodal_sft_completion_only",
    )
