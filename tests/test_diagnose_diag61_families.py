"""Families of wording that round diag61 added to the rules: more of MaxText's checks at start-up.

MaxText (https://github.com/AI-Hypercomputer/maxtext) refuses a run whose configuration cannot hold: Ulysses
attention with load balancing on (`maxtext_ulysses_load_balance`) or with an inferred (-1) context axis, as
USP words it too (`maxtext_context_parallel_inferred_size`); ring attention on a sequence the context size
squared does not divide (`maxtext_ring_max_target_length_cp_squared`) or with a clamped sa_block_q_dkv off the
lanes (`maxtext_ring_block_q_dkv_lanes`, the block and lanes named); MoE token chunks without ring of experts
(`maxtext_moe_token_chunks_ring`), a fully MoE model whose MLP sizes differ (`maxtext_fully_moe_mlp_dim`, both
sizes named), GPT-OSS with dense matmul and a capacity factor (`maxtext_gpt_oss_dropless`); explicit sharding
of a decoder block it does not implement (`maxtext_explicit_sharding_decoder`, the block named); distillation
without a teacher checkpoint (`maxtext_distill_teacher_path`); RL with two rollout axes at -1
(`maxtext_rl_rollout_parallelism_auto`); and the checkpoint converters without a checkpoint to read
(`maxtext_to_hf_checkpoint_path`) or loading a multimodal model lazily (`maxtext_to_maxtext_lazy_multimodal`).

Each case is another wording of its family (other values, pydantic's wrapping of a validator's error, the
sibling strategy's wording, under a traceback), and each family has a nearby wording it must not claim, so a
rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import MAXTEXT_TRACE, assert_fixed_by, assert_not_claimed, maxtext_pydantic


def test_ulysses_with_load_balancing_as_pydantic_prints_it() -> None:
    assert_fixed_by(
        maxtext_pydantic(
            "TPU Ulysses attention requires context_parallel_load_balance=False: after the all-to-all"
        ),
        "runtime_init_failure",
        "maxtext_ulysses_load_balance",
        "context_parallel_load_balance=False",
    )


def test_torchprimes_load_balancing_kernel_check_is_not_ulysses() -> None:
    assert_not_claimed(
        "ValueError: Load balanced context parallelism is only supported with the splash attention kernel",
        "maxtext_ulysses_load_balance",
    )


def test_usp_with_an_inferred_context_axis() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE
        + "ValueError: TPU USP attention requires explicit positive ici/dcn context parallelism "
        "values; inferred (-1) sizes are not supported.",
        "runtime_init_failure",
        "maxtext_context_parallel_inferred_size",
        "ici_context_parallelism=4",
    )


def test_maxtexts_two_axes_at_minus_one_is_not_the_context_check() -> None:
    assert_not_claimed(
        "AssertionError: Only one of the ICI parallelism axes can be unspecified (-1)",
        "maxtext_context_parallel_inferred_size",
    )


def test_ring_sequence_not_divisible_by_the_context_size_squared() -> None:
    assert_fixed_by(
        maxtext_pydantic(
            "TPU Tokamax ring attention requires max_target_length to be divisible by "
            "context_parallel_size squared."
        ),
        "shape_dtype_error",
        "maxtext_ring_max_target_length_cp_squared",
        "max_target_length to a multiple of the square",
    )


def test_ulysses_sequence_divisibility_is_not_the_squared_check() -> None:
    assert_not_claimed(
        "ValueError: TPU Ulysses attention requires max_target_length (4100) to be divisible by "
        "context_parallel_size (8).",
        "maxtext_ring_max_target_length_cp_squared",
    )


def test_ring_block_off_the_lanes_names_block_and_lanes() -> None:
    crash = assert_fixed_by(
        MAXTEXT_TRACE
        + "ValueError: TPU Tokamax ring attention with context_parallel_load_balance=True requires "
        "sa_block_q_dkv (320) to be a multiple of 128 after clamping.",
        "shape_dtype_error",
        "maxtext_ring_block_q_dkv_lanes",
        "sa_block_q_dkv",
    )
    assert "here 320" in (crash.fix or "")
    assert "multiple of 128" in (crash.fix or "")


def test_splash_query_block_check_is_not_the_ring_block() -> None:
    assert_not_claimed(
        "ValueError: q_block_size=512 should divide q_seq_len=1000",
        "maxtext_ring_block_q_dkv_lanes",
    )


def test_moe_token_chunks_under_a_traceback() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: num_moe_token_chunks > 1 requires use_ring_of_experts=True.",
        "runtime_init_failure",
        "maxtext_moe_token_chunks_ring",
        "use_ring_of_experts=True",
    )


def test_moe_emb_chunks_is_not_the_token_chunk_check() -> None:
    assert_not_claimed(
        "ValueError: num_moe_emb_chunks > 0 requires use_gmm_v2=True and use_ring_of_experts=True. "
        "Got use_gmm_v2=False, use_ring_of_experts=False.",
        "maxtext_moe_token_chunks_ring",
    )


def test_fully_moe_mlp_sizes_name_both() -> None:
    crash = assert_fixed_by(
        maxtext_pydantic(
            "For a fully MoE model, base_mlp_dim must equal base_moe_mlp_dim. Got base_mlp_dim=14336, "
            "base_moe_mlp_dim=1536."
        ),
        "runtime_init_failure",
        "maxtext_fully_moe_mlp_dim",
        "base_mlp_dim=1536",
    )
    assert "14336" in (crash.fix or "")


def test_moe_mlp_dim_must_be_positive_is_not_the_size_check() -> None:
    assert_not_claimed(
        "ValueError: moe_mlp_dim must be positive for MoE models (num_experts > 1)",
        "maxtext_fully_moe_mlp_dim",
    )


def test_gpt_oss_capacity_factor_as_pydantic_prints_it() -> None:
    assert_fixed_by(
        maxtext_pydantic("GPT-OSS MoE only supports dropless (capacity_factor=-1) with dense matmul."),
        "runtime_init_failure",
        "maxtext_gpt_oss_dropless",
        "capacity_factor=-1",
    )


def test_llama4_capacity_factor_is_not_gpt_oss() -> None:
    assert_not_claimed(
        "ValueError: Llama4 decoder has not been tested with capacity_factor >= 0 -- please set that value "
        "to -1 for now!",
        "maxtext_gpt_oss_dropless",
    )


def test_explicit_sharding_names_the_decoder() -> None:
    crash = assert_fixed_by(
        MAXTEXT_TRACE
        + "ValueError: Decoder 'qwen3_moe' is not supported with 'explicit' sharding. Supported "
        "options are: ['deepseek', 'simple_mlp', 'simple', 'llama2'].",
        "runtime_init_failure",
        "maxtext_explicit_sharding_decoder",
        "shard_mode=auto",
    )
    assert "qwen3_moe" in (crash.fix or "")


def test_an_unknown_decoder_block_is_not_the_sharding_check() -> None:
    assert_not_claimed(
        "ValueError: Decoder 'qwen3_moe' is not a valid DecoderBlockType",
        "maxtext_explicit_sharding_decoder",
    )


def test_distillation_without_a_teacher_under_a_traceback() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: Teacher model path is missing! You must provide "
        "'teacher_overrides.load_parameters_path' in your config or arguments.",
        "runtime_init_failure",
        "maxtext_distill_teacher_path",
        "teacher_overrides.load_parameters_path",
    )


def test_a_missing_model_path_elsewhere_is_not_the_teacher() -> None:
    assert_not_claimed(
        "OSError: Model path is missing: checkpoints/student/config.json",
        "maxtext_distill_teacher_path",
    )


def test_rl_rollout_axes_with_expert_and_data_at_minus_one() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: At most one of rollout_tensor_parallelism, rollout_data_parallelism, "
        "rollout_expert_parallelism can be -1 (auto-derived).\nCurrently resolved values:\n"
        "  - rollout_tensor_parallelism = 4\n  - rollout_data_parallelism = -1\n"
        "  - rollout_expert_parallelism = -1\n",
        "runtime_init_failure",
        "maxtext_rl_rollout_parallelism_auto",
        "rollout_tensor_parallelism=8",
    )


def test_rl_rollout_device_divisibility_is_not_the_auto_check() -> None:
    assert_not_claimed(
        "ValueError: num_sampler_devices 8 must be divisible by rollout_tensor_parallelism * "
        "rollout_expert_parallelism = 3",
        "maxtext_rl_rollout_parallelism_auto",
    )


def test_to_huggingface_without_a_checkpoint() -> None:
    assert_fixed_by(
        'File "src/maxtext/checkpoint_conversion/to_huggingface.py", line 500, in main\n'
        "ValueError: Either load_parameters_path or lora_restore_path must be specified.",
        "runtime_init_failure",
        "maxtext_to_hf_checkpoint_path",
        "load_parameters_path=",
    )


def test_load_path_with_checkpointing_off_is_not_the_converter() -> None:
    assert_not_claimed(
        "ValueError: You must set enable_checkpointing=True to load a checkpoint.",
        "maxtext_to_hf_checkpoint_path",
    )


def test_to_maxtext_lazy_load_of_a_multimodal_model() -> None:
    assert_fixed_by(
        'File "src/maxtext/checkpoint_conversion/to_maxtext.py", line 918, in main\n'
        "ValueError: lazy loading of HF tensors is not supported for multimodal models yet.",
        "runtime_init_failure",
        "maxtext_to_maxtext_lazy_multimodal",
        "--lazy_load_tensors=False",
    )


def test_multimodal_refusal_of_another_model_is_not_lazy_loading() -> None:
    assert_not_claimed(
        "ValueError: Multimodal is not yet supported for llama3.1-8b; only text inputs are supported.",
        "maxtext_to_maxtext_lazy_multimodal",
    )
