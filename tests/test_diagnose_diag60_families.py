"""Families of wording that round diag60 added to the rules: MaxText's configuration checks at start-up.

MaxText (https://github.com/AI-Hypercomputer/maxtext) refuses a run before it starts when its configuration
cannot hold: the ici_*_parallelism axes must multiply to the devices of one slice
(`maxtext_ici_product_devices_per_slice`, both numbers named), fp8 quantization takes no gradient accumulation
(`maxtext_fp8_gradient_accumulation`), a quantized KV cache needs kv_quant_axis
(`maxtext_kv_quant_axis_empty`), Llama4 routes each token to one expert (`maxtext_llama4_top1_routing`), and
only one of the Tokamax and jax splash kernels can be on (`maxtext_tokamax_and_jax_splash`).

Each case is another wording of its family (other sizes, pydantic's wrapping of a validator's error, another
spelling, under a traceback), and each family has a nearby wording it must not claim, so a rule matching
only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import MAXTEXT_TRACE, assert_fixed_by, assert_not_claimed, maxtext_pydantic


def test_ici_axes_multiplying_past_the_slice() -> None:
    crash = assert_fixed_by(
        MAXTEXT_TRACE + "AssertionError: Number of devices per slice 4 does not match the product of the ICI "
        "parallelism 32",
        "runtime_init_failure",
        "maxtext_ici_product_devices_per_slice",
        "ici_fsdp_parallelism=-1",
    )
    assert "4 here" in (crash.fix or "")
    assert "multiply to 32" in (crash.fix or "")


def test_jaxs_mesh_product_check_is_not_maxtexts() -> None:
    assert_not_claimed(
        "ValueError: Number of devices 8 must equal the product of mesh_shape (4, 4)",
        "maxtext_ici_product_devices_per_slice",
    )


def test_fp8_with_gradient_accumulation_as_pydantic_prints_it() -> None:
    assert_fixed_by(
        maxtext_pydantic("fp8 quantization is not compatible with gradient accumulation."),
        "runtime_init_failure",
        "maxtext_fp8_gradient_accumulation",
        "gradient_accumulation_steps=1",
    )


def test_another_gradient_accumulation_refusal_is_not_the_fp8_check() -> None:
    assert_not_claimed(
        "ValueError: Pipeline parallelism is not compatible with gradient accumulation.",
        "maxtext_fp8_gradient_accumulation",
    )


def test_a_quantized_kv_cache_without_its_axis() -> None:
    assert_fixed_by(
        maxtext_pydantic("kv_quant_axis cannot be empty when quantize_kvcache is True."),
        "runtime_init_failure",
        "maxtext_kv_quant_axis_empty",
        "kv_quant_axis=heads_and_dkv",
    )


def test_an_unknown_kv_quant_axis_is_not_an_empty_one() -> None:
    assert_not_claimed("ValueError: Invalid KV quant axis cfg: heads", "maxtext_kv_quant_axis_empty")


def test_llama4_given_two_experts_per_token() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE + "ValueError: Only top-1 routing is supported for Llama 4 for now!",
        "runtime_init_failure",
        "maxtext_llama4_top1_routing",
        "num_experts_per_tok=1",
    )


def test_llama4s_capacity_factor_check_is_not_the_routing_one() -> None:
    assert_not_claimed(
        "ValueError: Llama4 decoder has not been tested with capacity_factor >= 0 -- please set that value "
        "to -1 for now!",
        "maxtext_llama4_top1_routing",
    )


def test_both_splash_kernels_on_without_backquotes() -> None:
    assert_fixed_by(
        MAXTEXT_TRACE
        + "ValueError: At most one of use_tokamax_splash and use_jax_splash can be set to True.",
        "runtime_init_failure",
        "maxtext_tokamax_and_jax_splash",
        "use_jax_splash=False",
    )


def test_a_q_layout_needing_jax_splash_is_not_the_pair_check() -> None:
    assert_not_claimed(
        "ValueError: `force_q_layout` can only be true if `use_jax_splash` is also true.",
        "maxtext_tokamax_and_jax_splash",
    )
