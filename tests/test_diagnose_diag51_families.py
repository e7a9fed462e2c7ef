"""Families of wording that round diag51 added to the rules.

Two families: TPUEstimator's configuration check refusing an input-pipeline mode that only the TPU input
pipeline implements, for an estimator that runs on CPU or GPU ("Invalid TPUConfig `<field>` value. <MODE>
mode only works on use_tpu=True"; older releases spell TPUconfig, later ones "use_tpu = True."), and the PJRT
plugin of a device type loaded a second time in one process ("PJRT_Api already exists for device type tpu"),
the runtime having been started before the workers were spawned. Each case is another wording of its family
(another field and mode, the other spellings; another device type, the Python exception instead of the C++
check), and each family has a nearby wording it must not claim: a malformed value of a TPUConfig field, which
no choice of device fixes, and the TPU platform registered twice by two libraries. The assertions check the
category, the sub-rule chosen and what the fix names, so a rule matching only the collected log's exact text
would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose

_RULE = "runtime_init_failure/tpuestimator_mode_only_on_tpu"


@pytest.mark.parametrize(
    ("text", "field", "mode"),
    [
        (
            "ValueError: Invalid TPUConfig `eval_training_input_configuration` value. SLICED mode only works "
            "on use_tpu = True.",
            "eval_training_input_configuration",
            "SLICED",
        ),
        (
            'Traceback (most recent call last):\n  File "main.py", line 316, in main\n'
            "ValueError: Invalid TPUconfig `per_host_input_for_training` value. BROADCAST mode only works on "
            "use_tpu=True",
            "per_host_input_for_training",
            "BROADCAST",
        ),
    ],
)
def test_a_tpu_only_input_mode_on_an_estimator_off_the_tpu(text: str, field: str, mode: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "runtime_init_failure", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == _RULE
    assert f"TPUConfig {field}={mode}" in crash.fix
    assert f"InputPipelineConfig.{mode} if use_tpu" in crash.fix
    assert "PER_HOST_V1" in crash.fix


def test_a_malformed_tpuconfig_value_is_not_read_as_a_tpu_only_mode() -> None:
    """A value TPUConfig cannot parse is fixed by writing it right, not by choosing a mode per device."""
    crash = _diagnose(
        "ValueError: Invalid TPUConfig `iterations_per_loop` value. Value must be positive integer value or "
        "time-based value `<N><s|m|h>` where <N> is anypositive integer and `s`, `m`, `h` are unit of time "
        "in seconds, minutes, hours respectively. Examples of valid values: `3600s`, `60m`, `1h`."
    )
    assert crash.evidence.fix_rule != _RULE
    assert "PER_HOST_V1" not in crash.fix


_PJRT_RULE = "runtime_init_failure/pjrt_plugin_loaded_twice"


@pytest.mark.parametrize(
    ("text", "device"),
    [
        (
            "jaxlib.xla_extension.XlaRuntimeError: ALREADY_EXISTS: PJRT_Api already exists for device "
            "type tpu",
            "tpu",
        ),
        (
            "F0312 10:02:11.000123  4411 pjrt_registry.cc:117] Non-OK-status: "
            'pjrt::LoadPjrtPlugin("cuda", library_path).status() status: ALREADY_EXISTS: PJRT_Api already '
            "exists for device type cuda",
            "cuda",
        ),
    ],
)
def test_a_pjrt_plugin_loaded_twice_in_one_process(text: str, device: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "runtime_init_failure", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == _PJRT_RULE
    assert f"device type {device} was loaded a second time" in crash.fix
    assert "before xmp.spawn" in crash.fix


def test_a_tpu_platform_registered_twice_keeps_its_own_remedy() -> None:
    """Two libraries registering the TPU platform is told apart from a plugin loaded before the spawn."""
    crash = _diagnose("RuntimeError: TPU platform already registered")
    assert crash.evidence.fix_rule != _PJRT_RULE
    assert "loaded a second time" not in crash.fix
