"""Families of wording that round diag63 added to the rules: tpu-inference's own start-up and memory checks.

tpu-inference (https://github.com/vllm-project/tpu-inference), vLLM's TPU backend, refuses a configuration
with a message naming what must hold: the HBM the weights use above the --gpu-memory-utilization cap
(`tpuinf_hbm_cap_gpu_memory_utilization`), an environment variable outside its choices
(`tpuinf_env_var_choices`), context parallelism beside data parallelism
(`tpuinf_context_parallel_with_data_parallel`), prefill and decode context parallelism together
(`tpuinf_prefill_and_decode_context_parallel`), and a quantization scheme that reads symmetric weights only
(`quant_scheme_symmetric_only`).

Each case is another wording of its family (other values, another variable, the decode side, another
scheme, under a traceback), and each family has a nearby wording it must not claim, so a rule matching only a
collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_TRACE = (
    "(EngineCore_DP0 pid=1207) ERROR 09-03 08:12:40 [core.py:708] Traceback (most recent call last):\n"
    '(EngineCore_DP0 pid=1207) ERROR 09-03 08:12:40 [core.py:708]   File "/opt/venv/lib/python3.12/'
    'site-packages/tpu_inference/worker/tpu_worker.py", line 564, in determine_available_memory\n'
)


def test_hbm_above_the_utilization_cap_on_a_v5e() -> None:
    crash = assert_fixed_by(
        _TRACE + "(EngineCore_DP0 pid=1207) ERROR 09-03 08:12:40 [core.py:708] ValueError: "
        "total_hbm_used_gb=15.02GiB exceeds total_hbm_limit_cap_gb=12.8GiB by 2.22GiB. Please consider "
        "increasing --gpu-memory-utilization from 0.8 to a larger value.",
        "hbm_oom",
        "tpuinf_hbm_cap_gpu_memory_utilization",
        "--gpu-memory-utilization",
    )
    fix = crash.fix or ""
    assert "15.02 GiB" in fix and "12.8 GiB" in fix and "0.8" in fix
    assert "--tensor-parallel-size" in fix


def test_vllms_kv_cache_too_small_is_not_the_hbm_cap() -> None:
    assert_not_claimed(
        "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache "
        "is needed, which is larger than the available KV cache memory (1.20 GiB). Based on the available "
        "memory, the estimated maximum model length is 9824. Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.",
        "tpuinf_hbm_cap_gpu_memory_utilization",
    )


def test_boolean_environment_variable_refused() -> None:
    crash = assert_fixed_by(
        'File "/opt/venv/lib/python3.12/site-packages/tpu_inference/envs.py", line 160, in _get_bool_env\n'
        "ValueError: Invalid boolean value 'yes' for NEW_MODEL_DESIGN. Valid options: '0', '1', 'true', "
        "'false', 'True', 'False'.",
        "runtime_init_failure",
        "tpuinf_env_var_choices",
        "unset NEW_MODEL_DESIGN",
    )
    assert "'yes'" in (crash.fix or "") and "'true'" in (crash.fix or "")


def test_an_invalid_value_for_a_lower_case_option_is_not_an_environment_variable() -> None:
    assert_not_claimed(
        "ValueError: Invalid value 'fp4' for kv_cache_dtype. Valid options: ['auto', 'fp8', 'bfloat16'].",
        "tpuinf_env_var_choices",
    )


def test_decode_context_parallelism_beside_data_parallelism() -> None:
    assert_fixed_by(
        'File "/opt/venv/lib/python3.12/site-packages/tpu_inference/layers/common/sharding.py", line 360, '
        "in validate\nValueError: Decode context parallelism is not compatible with data parallelism yet.",
        "runtime_init_failure",
        "tpuinf_context_parallel_with_data_parallel",
        "--data-parallel-size 1",
    )


def test_context_parallelism_with_pipeline_stages_is_not_the_data_parallel_fix() -> None:
    assert_not_claimed(
        "ValueError: Prefill context parallelism is not compatible with pipeline parallelism yet.",
        "tpuinf_context_parallel_with_data_parallel",
    )


def test_prefill_and_decode_context_parallelism_under_a_traceback() -> None:
    assert_fixed_by(
        '(APIServer pid=88) File "/opt/venv/lib/python3.12/site-packages/tpu_inference/layers/common/'
        'sharding.py", line 351, in validate\n'
        "(APIServer pid=88) ValueError: only one of prefill/decode context parallelism may be enabled "
        "at a time.",
        "runtime_init_failure",
        "tpuinf_prefill_and_decode_context_parallel",
        "--decode-context-parallel-size 1",
    )


def test_tensor_parallel_not_divisible_by_decode_context_is_not_the_both_on_fix() -> None:
    assert_not_claimed(
        "ValueError: tensor_parallelism (8) must be divisible by decode_context_parallelism (3)",
        "tpuinf_prefill_and_decode_context_parallel",
    )


def test_another_scheme_that_reads_symmetric_weights_only() -> None:
    crash = assert_fixed_by(
        'File "/opt/venv/lib/python3.12/site-packages/tpu_inference/layers/vllm/quantization/'
        'compressed_tensors/schemes/compressed_tensors_w8a8_int8.py", line 61, in __init__\n'
        "ValueError: Scheme W8A8Int8 only supports symmetric quantization.",
        "unsupported_op",
        "quant_scheme_symmetric_only",
        "symmetric: true",
    )
    assert "W8A8Int8" in (crash.fix or "")


def test_symmetric_activations_required_is_not_the_weight_fix() -> None:
    assert_not_claimed(
        "NotImplementedError: Asymmetric activation quantization is not supported; only symmetric per-token "
        "activations are implemented.",
        "quant_scheme_symmetric_only",
    )
