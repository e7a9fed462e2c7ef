"""Families of wording that round diag55 added to the rules: vLLM TorchTPU's start-up checks of a serving
configuration, each naming the setting that fixes it.

Async scheduling refused beside a feature that needs each step's sampled tokens on the host
(`async_scheduling_refused`); prefix caching on a hybrid Mamba model without the Mamba cache mode or the KV
pool it needs (`hybrid_prefix_caching_mamba_cache_mode`, `hybrid_prefix_caching_unified_pool`); prefill
context parallelism (PCP) requiring a flag or a setting (`vllm_pcp_required_setting`); pipeline parallelism on
TPU with a feature it does not serve yet (`vllm_tpu_pipeline_parallel_unsupported`); and an environment
variable that was removed and must be unset (`removed_env_var_unset`). All are `runtime_init_failure`: the
server refuses its configuration at start-up, whatever ops the model uses.

Each case is another wording of its family (another method, setting, feature or variable than the corpus
files), and each family has a nearby wording it must not claim, so a rule matching only a collected log's text
would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_async_scheduling_refused_with_another_speculative_method() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: Async scheduling with speculative method 'suffix' is not supported on TPU; Run "
        "with async_scheduling=False.",
        "runtime_init_failure",
        "async_scheduling_refused",
        "--no-async-scheduling",
    )
    assert "'suffix'" in crash.fix


def test_async_scheduling_refused_by_another_feature() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: The structured-output backend on TPU does not support async scheduling.",
        "runtime_init_failure",
        "async_scheduling_refused",
        "async_scheduling=False",
    )
    assert "speculative decoding with" not in crash.fix


def test_a_scheduler_log_line_about_async_scheduling_is_not_claimed() -> None:
    assert_not_claimed(
        "INFO 12-06 03:00:00 [scheduler.py:211] Async scheduling is enabled; chunked prefill is not "
        "supported for this model, falling back to full prefill.",
        "async_scheduling_refused",
    )


def test_hybrid_prefix_caching_with_another_mamba_cache_mode() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: Prefix caching on hybrid Mamba models requires mamba_cache_mode='align' "
        "(got 'all').",
        "runtime_init_failure",
        "hybrid_prefix_caching_mamba_cache_mode",
        "--mamba-cache-mode align",
    )
    assert "(got 'all')" in crash.fix


def test_hybrid_prefix_caching_without_the_unified_pool_in_an_engine_log() -> None:
    assert_fixed_by(
        "(EngineCore_DP0 pid=311) ERROR 12-06 03:00:00 [core.py:866] NotImplementedError: Prefix caching on "
        "hybrid Mamba models requires the unified KV pool; remove TPU_VLLM_ENABLE_UNIFIED_BLOCK_POOL=0.",
        "runtime_init_failure",
        "hybrid_prefix_caching_unified_pool",
        "unset TPU_VLLM_ENABLE_UNIFIED_BLOCK_POOL",
    )


def test_a_hybrid_model_without_prefix_caching_is_not_claimed() -> None:
    assert_not_claimed(
        "ValueError: Hybrid Mamba models require --max-num-seqs to be at most 256, got 512.",
        "hybrid_prefix_caching_mamba_cache_mode",
    )


def test_pcp_requiring_another_setting() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: PCP MTP currently requires num_speculative_tokens=1.",
        "runtime_init_failure",
        "vllm_pcp_required_setting",
        "num_speculative_tokens=1",
    )
    assert "--prefill-context-parallel-size" in crash.fix


def test_pcp_requiring_a_flag() -> None:
    assert_fixed_by(
        "NotImplementedError: PCP on a quantized MoE model requires --enable-expert-parallel: the experts "
        "would otherwise be split across the PCP ranks.",
        "runtime_init_failure",
        "vllm_pcp_required_setting",
        "set --enable-expert-parallel",
    )


def test_a_requirement_without_pcp_is_not_claimed() -> None:
    assert_not_claimed(
        "ValueError: DCP requires num_kv_heads=8 to be divisible by the decode context parallel size 3.",
        "vllm_pcp_required_setting",
    )


def test_pipeline_parallelism_refusing_another_feature() -> None:
    crash = assert_fixed_by(
        "NotImplementedError: Pipeline parallelism on TPU does not support KV transfer connectors yet.",
        "runtime_init_failure",
        "vllm_tpu_pipeline_parallel_unsupported",
        "KV transfer connectors",
    )
    assert "--pipeline-parallel-size" in crash.fix


def test_pipeline_parallelism_with_its_remedy_sentence() -> None:
    assert_fixed_by(
        "NotImplementedError: Pipeline parallelism on TPU does not support LoRA adapters yet. Pass "
        "--max-loras 0.",
        "runtime_init_failure",
        "vllm_tpu_pipeline_parallel_unsupported",
        "does not serve LoRA adapters yet: Pass --max-loras 0.",
    )


def test_pipeline_parallelism_of_another_backend_is_not_claimed() -> None:
    assert_not_claimed(
        "NotImplementedError: Pipeline parallelism is not supported for this model.",
        "vllm_tpu_pipeline_parallel_unsupported",
    )


def test_another_removed_environment_variable() -> None:
    crash = assert_fixed_by(
        "ValueError: TPU_USE_OLD_RPA_KERNEL is no longer supported and enables nothing. Unset it; the ragged "
        "paged attention kernel is RPA_KERNEL_VERSION=3.",
        "runtime_init_failure",
        "removed_env_var_unset",
        "unset TPU_USE_OLD_RPA_KERNEL",
    )
    assert "RPA_KERNEL_VERSION=3" in crash.fix


def test_a_removed_environment_variable_without_a_replacement() -> None:
    crash = assert_fixed_by(
        "ValueError: VLLM_TPU_LEGACY_SAMPLER is no longer supported. Unset it.",
        "runtime_init_failure",
        "removed_env_var_unset",
        "unset VLLM_TPU_LEGACY_SAMPLER",
    )
    assert "now turns" not in crash.fix


def test_a_removed_api_without_unset_advice_is_not_claimed() -> None:
    assert_not_claimed(
        "AttributeError: XLA_USE_BF16 is no longer supported; cast the model with model.to(torch.bfloat16).",
        "removed_env_var_unset",
    )
