"""Families of wording that round diag68 added to the rules: more of sglang-jax's serving checks.

sglang-jax (https://github.com/sgl-project/sglang-jax), SGLang's JAX backend for TPU, refuses a serving
configuration that cannot work and names what must hold: HiCache's host-tier ratio at or below zero
(`sglang_hicache_ratio_positive`), static LoRA without its fixed scale (`sglang_static_lora_scaling`) and an
adapter pinned when the pinned adapters already fill every batch slot but the one kept for unpinned adapters
(`sglang_lora_pin_slots`).

Each case is another wording of its family (other values, a flag's spelling, under a traceback or a log
prefix), and each family has a nearby wording it must not claim, so a rule matching only a collected log's
text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def _trace(path: str, function: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/venv/lib/python3.11/site-packages/sgl_jax/srt/{path}", line 210, in {function}\n'
        "    raise ValueError(\n"
    )


def test_a_negative_hicache_ratio_under_a_launch_prefix() -> None:
    crash = assert_fixed_by(
        "[2026-09-02 08:14:51] Launch failed:\n"
        + _trace("server_args.py", "__post_init__")
        + "ValueError: hicache_ratio must be positive, got -1.5",
        "runtime_init_failure",
        "sglang_hicache_ratio_positive",
        "--hicache-ratio",
    )
    assert "(it was -1.5)" in (crash.fix or "")


def test_another_hicache_size_is_not_the_ratio_check() -> None:
    assert_not_claimed(
        "ValueError: hicache_size must be non-negative, got -4", "sglang_hicache_ratio_positive"
    )


def test_static_lora_scaling_spelled_as_a_flag() -> None:
    assert_fixed_by(
        _trace("server_args.py", "check_static_lora_args")
        + "AssertionError: lora-scaling is required when --enable-static-lora is set",
        "runtime_init_failure",
        "sglang_static_lora_scaling",
        "--lora-scaling",
    )


def test_lora_paths_refused_with_static_lora_is_not_the_scaling_check() -> None:
    assert_not_claimed(
        "AssertionError: lora-paths is not required when enable-static-lora is enabled",
        "sglang_static_lora_scaling",
    )


def test_pinning_one_adapter_too_many_under_the_lora_manager() -> None:
    crash = assert_fixed_by(
        _trace("lora/lora_manager.py", "load_lora_config")
        + "ValueError: Cannot pin adapter finance-v2: already have 1 pinned adapters "
        "(max 1, reserving 1 slot for dynamic use)",
        "runtime_init_failure",
        "sglang_lora_pin_slots",
        "--max-loras-per-batch",
    )
    assert "(already 1 pinned, max 1)" in (crash.fix or "")


def test_an_adapter_loaded_twice_is_not_the_pin_check() -> None:
    assert_not_claimed("ValueError: LoRA config finance-v2 already loaded", "sglang_lora_pin_slots")
