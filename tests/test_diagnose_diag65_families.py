"""Families of wording that round diag65 added to the rules: sglang-jax's own start-up checks.

sglang-jax (https://github.com/sgl-project/sglang-jax), SGLang's JAX backend for TPU, refuses a serving
configuration that cannot work and names what must hold: a tensor-parallel size the attention heads do not
split over (`sglang_tp_size_vs_attention_heads`, vLLM's wording too) or the node count does not divide
(`sglang_tp_size_vs_nnodes`), the recurrent extra buffer without what it needs
(`sglang_recurrent_extra_buffer_needs`), routed-experts capture on a dense model
(`sglang_routed_experts_capture_dense_model`), a multi-layer MTP draft whose step count is not the model's
MTP layer count (`sglang_mtp_steps_vs_nextn_layers`) and a MoE backend refused for an architecture
(`sglang_moe_backend_architecture`).

Each case is another wording of its family (other values, another flag, another engine's phrasing, under a
traceback or a log prefix), and each family has a nearby wording it must not claim, so a rule matching only a
collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def _trace(path: str, function: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/venv/lib/python3.11/site-packages/sgl_jax/srt/{path}", line 120, in {function}\n'
        "    raise ValueError(\n"
    )


def test_vllms_wording_of_heads_against_the_tensor_parallel_size() -> None:
    crash = assert_fixed_by(
        "ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).",
        "runtime_init_failure",
        "sglang_tp_size_vs_attention_heads",
        "--tp-size",
    )
    assert "32 heads, 3 shards" in (crash.fix or "")


def test_heads_against_kv_heads_is_not_the_tensor_parallel_check() -> None:
    assert_not_claimed(
        "AssertionError: Number of attention heads (28) must be divisible by num_key_value_heads (3)",
        "sglang_tp_size_vs_attention_heads",
    )


def test_tp_size_against_the_nodes_under_a_scheduler_prefix() -> None:
    assert_fixed_by(
        "[2026-08-21 12:05:33] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/sgl_jax/srt/server_args.py", line 1853, in check\n'
        "AssertionError: tp_size must be divisible by the number of nodes",
        "runtime_init_failure",
        "sglang_tp_size_vs_nnodes",
        "--nnodes",
    )


def test_dp_size_against_the_nodes_is_not_the_tp_check() -> None:
    assert_not_claimed(
        "AssertionError: dp_size must be divisible by number of nodes", "sglang_tp_size_vs_nnodes"
    )


def test_the_extra_buffer_needing_the_unified_radix_tree() -> None:
    crash = assert_fixed_by(
        _trace("model_executor/model_runner_kv_cache_mixin.py", "_enforce")
        + "AssertionError: --enable-recurrent-extra-buffer requires --enable-unified-radix-tree "
        "(recurrent radix caching).",
        "runtime_init_failure",
        "sglang_recurrent_extra_buffer_needs",
        "--enable-recurrent-extra-buffer",
    )
    assert "conflicts with --enable-unified-radix-tree" in (crash.fix or "")


def test_another_flags_requirement_is_not_the_extra_buffers() -> None:
    assert_not_claimed(
        "ValueError: --disaggregation-enable-chunk-prefill-transfer requires --disable-radix-cache",
        "sglang_recurrent_extra_buffer_needs",
    )


def test_routed_experts_capture_with_one_flag() -> None:
    assert_fixed_by(
        _trace("layers/routed_experts_capturer.py", "create")
        + "ValueError: Routed-experts capture flags (--enable-return-routed-experts) require a MoE model; "
        "this model is router-less (no num_experts).",
        "runtime_init_failure",
        "sglang_routed_experts_capture_dense_model",
        "--enable-return-routed-experts",
    )


def test_a_recorder_asking_for_a_moe_model_is_not_the_capture_check() -> None:
    assert_not_claimed(
        "ValueError: Expert distribution recorder requires a MoE model with num_experts set",
        "sglang_routed_experts_capture_dense_model",
    )


def test_mtp_steps_above_the_models_layers() -> None:
    crash = assert_fixed_by(
        _trace("speculative/multi_layer_draft_worker.py", "__init__")
        + "AssertionError: --speculative-num-steps=4 must equal the model's num_nextn_predict_layers=1 "
        "(one runner per MTP layer)",
        "runtime_init_failure",
        "sglang_mtp_steps_vs_nextn_layers",
        "--speculative-num-steps",
    )
    assert "set it to 1, not 4" in (crash.fix or "")


def test_steps_against_draft_tokens_is_not_the_mtp_check() -> None:
    assert_not_claimed(
        "ValueError: speculative_num_steps must equal speculative_num_draft_tokens - 1, got 3 and 3",
        "sglang_mtp_steps_vs_nextn_layers",
    )


def test_another_moe_backend_refused_for_an_architecture() -> None:
    assert_fixed_by(
        _trace("configs/model_config.py", "_assert_backend")
        + "AssertionError: moe_backend='epmoe' only supports Qwen3/DeepSeek model architectures for now; "
        "got architectures=['LlamaForCausalLM']",
        "unsupported_op",
        "sglang_moe_backend_architecture",
        "--moe-backend",
    )


def test_an_unknown_moe_backend_name_is_not_the_architecture_check() -> None:
    assert_not_claimed("ValueError: Unsupported moe_backend: 'fast'", "sglang_moe_backend_architecture")
