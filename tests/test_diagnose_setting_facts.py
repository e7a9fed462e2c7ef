"""The settings a crash log names itself (crash_setting_facts) and the fallbacks that name them in the fix.

Each case is a wording written for the test (not a corpus file): the mechanisms must read the setting from
any wording of its family, and stay silent where the log does not name one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pytest

from tests.crashlog_support import diagnosed_as
from tpu_runtime.diagnose.crash_setting_facts import (
    accepted_value_facts,
    crash_phase_facts,
    exclusive_scope_facts,
    init_order_facts,
    mesh_device_facts,
    missing_api_facts,
    refused_env_facts,
    rejected_flag_facts,
    size_mismatch_facts,
    size_setting_facts,
)
from tpu_runtime.diagnose.crash_suggestion import find_suggestions
from tpu_runtime.diagnose.crashlog import diagnose_log

Extractor = Callable[[Sequence[str]], Mapping[str, object]]

# (extractor, log lines, the facts it must read): each wording written for the test, with lines that
# must yield nothing beside the ones that name a setting.
EXTRACTED: list[tuple[Extractor, list[str], dict[str, object]]] = [
    (
        size_setting_facts,
        ["(devices, tokens per device) = (4, 65536)"],
        {"size_settings": "tokens per device = 65536"},
    ),
    (
        size_setting_facts,
        ["args: Namespace(model='m', max_model_len=32768, gpu_memory_utilization=0.95, seed=0)"],
        {"size_settings": "max_model_len = 32768, gpu_memory_utilization = 0.95"},
    ),
    (
        size_setting_facts,
        ["--per_device_train_batch_size 16"],
        {"size_settings": "per_device_train_batch_size = 16"},
    ),
    # source code a traceback quotes is not a setting the run printed
    (size_setting_facts, ['  File "train.py", line 9, in main', "    loader = make(batch_size=512)"], {}),
    (size_setting_facts, ["Number of tokens: 750515", "step 3 loss 2.1"], {}),
    (
        size_setting_facts,
        [
            "WARNING 12-12 11:16:38 tpu_model_runner.py:126] The max_model_len (8192) is too large. "
            "Consider setting --max-model-len to a smaller value."
        ],
        {"size_settings": "--max-model-len (a warning advises a smaller value)"},
    ),
    (size_setting_facts, ["Consider setting a seed for reproducibility."], {}),
    # progress counters are not size settings
    (
        size_setting_facts,
        ["Epoch 1 batch 300 loss 2.1", "step 40/100 batch_size: 3/100", "processed tokens: 51200"],
        {},
    ),
    (size_setting_facts, ["train_batch_size = 64"], {"size_settings": "train_batch_size = 64"}),
    (
        refused_env_facts,
        ["Unknown PJRT_DEVICE 'GPU0'"],
        {"refused_env_var": "PJRT_DEVICE", "refused_env_value": "GPU0"},
    ),
    (
        refused_env_facts,
        ["XLA_USE_SPMD=maybe is not a valid value"],
        {"refused_env_var": "XLA_USE_SPMD", "refused_env_value": "maybe"},
    ),
    (refused_env_facts, ["unknown device xla:3"], {}),
    (
        accepted_value_facts,
        ["NotImplementedError: awq not supported.", "Supported methods are ['fp8', None]"],
        {"accepted_values": "'fp8', None"},
    ),
    (
        accepted_value_facts,
        ["ValueError: mode must be one of: train, eval"],
        {"accepted_values": "train, eval"},
    ),
    (
        accepted_value_facts,
        ["error: argument --kv-cache-dtype: invalid choice: 'fp8_x' (choose from auto, bfloat16, fp8_e5m2)"],
        {"accepted_values": "auto, bfloat16, fp8_e5m2"},
    ),
    (accepted_value_facts, ["loss 0.3 accuracy 0.91"], {}),
    # the quoted forms a value must take
    (
        accepted_value_facts,
        ["ValueError: every pool size must be in 'K' or 'KxL' format."],
        {"accepted_values": "'K', 'KxL'"},
    ),
    (
        accepted_value_facts,
        ['ValueError: the endpoint should be of the form "host:port", got 10.0.0.2'],
        {"accepted_values": '"host:port"'},
    ),
    # a format named in words, with no quoted form, lists nothing
    (accepted_value_facts, ["ValueError: the weights must be in the same format as the checkpoint"], {}),
    (
        missing_api_facts,
        ["AttributeError: module 'jax.experimental.pjit' has no attribute 'with_mesh'"],
        {"missing_api": "jax.experimental.pjit.with_mesh", "missing_api_package": "jax"},
    ),
    (
        init_order_facts,
        [
            "Traceback (most recent call last):",
            '  File "/usr/lib/python3/site-packages/torch_xla/runtime.py", line 40, in use_spmd',
            "    raise RuntimeError('XLA runtime is already initialized!')",
            "RuntimeError: XLA runtime is already initialized!",
        ],
        {"late_call": "use_spmd"},
    ),
    (init_order_facts, ["RuntimeError: device busy"], {}),
    (
        mesh_device_facts,
        ["ValueError: Number of devices 2 must equal the product of mesh_shape (2, 4)"],
        {"visible_devices": 2, "mesh_devices": 8},
    ),
    (
        mesh_device_facts,
        ["Insufficient devices for 2D mesh: found 4, expected 16"],
        {"visible_devices": 4, "mesh_devices": 16},
    ),
    (size_mismatch_facts, ["TypeError: got (512,) and (768,)"], {"mismatch_sizes": "(512,) vs (768,)"}),
    (size_mismatch_facts, ["ValueError: got (3,) and (3,)"], {}),
    (
        rejected_flag_facts,
        ["F0101 parse_flags_from_env.cc:225] Unknown flags in XLA_FLAGS: --xla_foo=1"],
        {"rejected_flag": "--xla_foo", "flag_source": "XLA_FLAGS"},
    ),
    (rejected_flag_facts, ["ERROR: Unknown command line flag 'xla_bar'"], {"rejected_flag": "xla_bar"}),
    (rejected_flag_facts, ["flags parsed: 12"], {}),
    (
        exclusive_scope_facts,
        ["ValueError: Pipeline parallelism can only be enabled on ICI or DCN, not both."],
        {
            "exclusive_feature": "Pipeline parallelism",
            "exclusive_a": "ICI",
            "exclusive_b": "DCN",
            "exclusive_setting_a": "ici_pipeline_parallelism",
            "exclusive_setting_b": "dcn_pipeline_parallelism",
            "exclusive_feature_lines": [
                "ValueError: Pipeline parallelism can only be enabled on ICI or DCN, not both."
            ],
        },
    ),
    (
        exclusive_scope_facts,
        ["ValueError: Prefetching may only be used with hbm or host, not both"],
        {
            "exclusive_feature": "Prefetching",
            "exclusive_a": "hbm",
            "exclusive_b": "host",
            "exclusive_feature_lines": [
                "ValueError: Prefetching may only be used with hbm or host, not both"
            ],
        },
    ),
    # a choice between two values that does not forbid both is no exclusive scope
    (exclusive_scope_facts, ["ValueError: mode can only be set to train or eval"], {}),
]


@pytest.mark.parametrize(("extractor", "lines", "expected"), EXTRACTED)
def test_each_extractor_reads_the_setting_a_log_names(
    extractor: Extractor, lines: list[str], expected: dict[str, object]
) -> None:
    assert extractor(lines) == expected


def test_phase_at_crash_is_the_last_progress_line_before_the_first_fatal_one() -> None:
    lines = [
        "INFO restoring parameters from ckpt-10",
        "INFO Validation [2/8]",
        "WARNING slow input pipeline",
        "terminate called after throwing an instance of 'std::bad_alloc'",
        "INFO Evaluation [9/9]",  # after the fatal line: not the phase that died
    ]
    assert crash_phase_facts(lines) == {"crash_phase": "validation", "phase_line": "INFO Validation [2/8]"}
    # a path word (xla/compiler/...) is not a compile phase
    assert crash_phase_facts(["tensorflow/compiler/xla/client.cc:12: note", "Check failed: x"]) == {}


def test_negative_advice_counts_and_first_person_does_not() -> None:
    found = find_suggestions(["RuntimeError: Do not call xr.use_spmd() after creating XLA tensors."])
    assert found and "xr.use_spmd()" in found[0].named
    assert (
        find_suggestions(["RuntimeError: don't know how to restore data location of torch.FloatStorage"])
        == []
    )


def test_fallbacks_name_the_setting_the_log_names() -> None:
    hbm = diagnose_log(
        "(devices, tokens per device) = (8, 262144)\n"
        "RuntimeError: Resource exhausted: Ran out of memory in memory space hbm. Used 20.5G of 16.00G hbm."
        "\n",
        "-",
    )
    assert hbm.category == "hbm_oom" and "tokens per device = 262144" in hbm.fix
    env = diagnose_log("RuntimeError: Check failed: client\nUnknown PJRT_DEVICE 'GPU0'\n", "-")
    assert env.category == "runtime_init_failure"
    assert (
        env.evidence.fix_rule == "runtime_init_failure/from_facts_refused_env_value" and "'GPU0'" in env.fix
    )
    mesh = diagnose_log("ValueError: Number of devices 2 must equal the product of mesh_shape (2, 4)\n", "-")
    assert mesh.category == "runtime_init_failure" and "multiply to 2" in mesh.fix
    api = diagnose_log("AttributeError: module 'torch_xla.runtime' has no attribute 'use_spmd'\n", "-")
    assert api.category == "version_mismatch" and "upgrade torch_xla" in api.fix.lower()
    host = diagnose_log(
        "INFO:tensorflow:Evaluation [4/10]\nterminate called after throwing an instance of 'std::bad_alloc'\n"
        "  what():  std::bad_alloc\nAborted\n",
        "-",
    )
    assert host.category == "host_oom" and "batch size" in host.fix


def test_a_refusal_that_lists_what_it_accepts_gets_those_values_as_the_fix() -> None:
    crash = diagnosed_as(
        "NotImplementedError: awq quantization method not supported.\n"
        "Supported methods are dict_keys([None, 'int8'])\n",
        "unsupported_op",
        "unsupported_op/message_choices",
    )
    assert "None, 'int8'" in crash.fix
