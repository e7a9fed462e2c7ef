"""Round diag106's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: one jitted function named again in JAX's compile log is a recompilation (a weak cue that
counts a repeated function, not many functions compiled once each), and the same input shapes with a new
argument mapping are answered with one fixed sharding (`recompilation/from_facts_jax_sharding_changed`); a
dynamo guard that names one input dimension's size (`from_facts_dynamo_size_guard`) or a Python number
(`from_facts_dynamo_value_guard`); a recompilation raised as an error is no shape error; and a compilation
cache set up after the first computation (`from_facts_cache_initialized_late`) (docs/diagnose-accuracy.md,
"Round diag106")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, diagnose_rules_alone

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def _compile(function: str, shapes: str, mapping: str) -> str:
    return f"Compiling {function} with global shapes and types ({shapes}). Argument mapping: ({mapping}).\n"


_SHARDED = (
    "NamedSharding(mesh=Mesh('batch': 4, 'model': 2, axis_types=(Auto, Auto)), "
    "spec=P({spec}), memory_kind=device)"
)
RESHARDED = (
    _compile("jit(eval_step)", "ShapedArray(bfloat16[32,2048])", _SHARDED.format(spec="'batch', None"))
    + "Finished XLA compilation of jit(eval_step) in 2.104 sec\n"
    + _compile("jit(eval_step)", "ShapedArray(bfloat16[32,2048])", _SHARDED.format(spec="None, 'model'"))
    + "Finished XLA compilation of jit(eval_step) in 2.311 sec\n"
)


def test_one_function_compiled_again_with_a_new_sharding_is_answered_with_one_sharding() -> None:
    assert _cue(RESHARDED) == "recompilation"
    category, fix_rule, fix = ablated_verdict(RESHARDED)
    assert (category, fix_rule) == ("recompilation", "recompilation/from_facts_jax_sharding_changed")
    assert "P('batch', None) then P(None, 'model')" in fix and "in_shardings" in fix


def test_functions_compiled_once_each_or_with_new_shapes_are_no_sharding_change() -> None:
    start_up = (
        _compile("jit(convert_element_type)", "ShapedArray(float32[])", "UnspecifiedValue")
        + _compile("jit(broadcast_in_dim)", "ShapedArray(float32[])", "UnspecifiedValue")
        + _compile("jit(eval_step)", "ShapedArray(bfloat16[32,2048])", "UnspecifiedValue")
    )
    assert _cue(start_up) is None
    new_shapes = _compile("jit(eval_step)", "ShapedArray(bfloat16[32,2048])", "UnspecifiedValue") + _compile(
        "jit(eval_step)", "ShapedArray(bfloat16[24,2048])", "UnspecifiedValue"
    )
    assert _cue(new_shapes) == "recompilation"
    assert ablated_verdict(new_shapes)[1] != "recompilation/from_facts_jax_sharding_changed"


SIZE_GUARD = (
    "torch._dynamo.exc.RecompileError: Recompiling function decode in /srv/app/serve.py:88\n"
    "    triggered by the following guard failure(s):\n"
    "    - 2/0: tensor 'input_ids' size mismatch at index 1. expected 256, actual 311\n"
)


def test_a_recompile_error_on_a_size_guard_is_a_recompilation_answered_with_that_dimension() -> None:
    assert _cue(SIZE_GUARD) == "recompilation"
    category, fix_rule, fix = ablated_verdict(SIZE_GUARD)
    assert (category, fix_rule) == ("recompilation", "recompilation/from_facts_dynamo_size_guard")
    assert "dimension 1" in fix and "pad" in fix and "mark_dynamic(tensor, 1)" in fix


def test_a_size_mismatch_without_a_recompilation_stays_a_shape_error() -> None:
    text = "RuntimeError: size mismatch at index 1. expected 256, actual 311 (concatenating the cache)\n"
    assert _cue(text) != "recompilation"
    assert ablated_verdict(text)[1] != "recompilation/from_facts_dynamo_size_guard"


VALUE_GUARD = (
    "[__recompiles] Recompiling function forward in /srv/app/model.py:40\n"
    "[__recompiles]     triggered by the following guard failure(s):\n"
    "[__recompiles]     - 0/3: temperature == 0.7\n"
)


def test_a_guard_on_a_python_number_is_answered_with_a_tensor() -> None:
    category, fix_rule, fix = ablated_verdict(VALUE_GUARD)
    assert (category, fix_rule) == ("recompilation", "recompilation/from_facts_dynamo_value_guard")
    assert "temperature == 0.7" in fix and "torch.tensor(value)" in fix


def test_a_guard_on_a_dtype_is_no_python_number() -> None:
    dtype_guard = "tensor 'x' dtype mismatch. expected Float, actual BFloat16"
    text = VALUE_GUARD.replace("temperature == 0.7", dtype_guard)
    assert ablated_verdict(text)[1] != "recompilation/from_facts_dynamo_value_guard"


def test_a_compilation_cache_set_up_late_is_answered_with_initialising_it_first() -> None:
    text = "RuntimeError: The compilation cache has already been initialized for this process\n"
    assert _cue(text) == "recompilation"
    category, fix_rule, fix = ablated_verdict(text)
    assert (category, fix_rule) == ("recompilation", "recompilation/from_facts_cache_initialized_late")
    assert "initialize_cache" in fix and "jax_compilation_cache_dir" in fix


def test_a_runtime_initialised_too_early_is_no_cache_set_up() -> None:
    text = "RuntimeError: Runtime is already initialized. Do not use the XLA device before xmp.spawn.\n"
    assert _cue(text) != "recompilation"
    assert ablated_verdict(text)[1] != "recompilation/from_facts_cache_initialized_late"


def test_the_shipped_rules_leave_a_sharding_change_and_a_recompile_error_to_these_answers() -> None:
    # the generic retrace sub-rule steps aside for a new sharding; RecompileError is no shape error
    assert_fixed_by(RESHARDED, "recompilation", "from_facts_jax_sharding_changed", "in_shardings")
    assert diagnose_rules_alone(SIZE_GUARD).category == "recompilation"
