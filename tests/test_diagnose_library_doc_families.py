"""Errors that library documentation pages (Flax, Tunix, t5x, TensorFlow, accelerate) print beside their fix:
a Flax NNX object mutated through a closure inside a transform, a restore target whose tree differs from the
saved one, a sampler cache shorter than the steps, a gin binding left required, mutable hijax outputs of
jax.jit, tf.function variables made after the first call, protobufs over 2GB and a spawned process's segfault.

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
names and values, so each case checks that the rule keys on the message's fixed words and that the fix
quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.crashlog import diagnose_log


def test_a_captured_pytree_mutated_in_a_transform_asks_to_pass_it_as_an_argument() -> None:
    text = (
        "flax.errors.TraceContextError: Cannot mutate 'Counter' from different trace level "
        "(https://flax.readthedocs.io/en/latest/api_reference/flax.errors.html#flax.errors.TraceContextError)"
    )
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/nnx_mutation_through_closure")
    assert "'Counter'" in crash.fix
    assert "argument" in crash.fix
    assert "nnx.split" in crash.fix


def test_a_variable_type_mutated_from_another_trace_level_is_named() -> None:
    crash = diagnosed_as(
        "Cannot mutate BatchStat from a different trace level",
        "shape_dtype_error",
        "shape_dtype_error/nnx_mutation_through_closure",
    )
    assert "BatchStat" in crash.fix


def test_a_restore_target_of_another_tree_names_the_first_differing_key() -> None:
    text = (
        "ValueError: User-provided restore item and on-disk value metadata tree structures do not match: "
        "{'decoder': Diff(lhs={'w': {'value': ShapeDtypeStruct(shape=(8,), dtype=bfloat16)}}, rhs=None)}"
    )
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/restore_tree_structure_mismatch")
    assert "'decoder'" in crash.fix
    assert "replace_by_pure_dict" in crash.fix
    assert "partial_restore=True" in crash.fix


def test_a_sampler_cache_shorter_than_the_steps_quotes_both_numbers() -> None:
    text = "ValueError: Total sampling steps 5120 must be less than the cache size 4096."
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/sampler_kv_cache_too_small")
    assert "5120" in crash.fix
    assert "4096" in crash.fix
    assert "kv_cache_size" in crash.fix


def test_a_required_gin_binding_is_named_in_the_override() -> None:
    text = "ValueError: train.eval_period set to `%gin.REQUIRED` but not subsequently overridden."
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/gin_required_binding_unset")
    assert "--gin.train.eval_period=" in crash.fix
    assert "macro.value" not in crash.fix


def test_a_required_gin_macro_drops_its_macro_value_suffix() -> None:
    text = "ValueError: TRAIN_STEPS/macro.value set to `%gin.REQUIRED` but not subsequently overridden."
    crash = diagnose_log(text, "t5x.log")
    assert crash.evidence.fix_rule == "runtime_init_failure/gin_required_binding_unset"
    assert "--gin.TRAIN_STEPS=" in crash.fix


def test_mutable_hijax_outputs_of_jit_ask_for_hijax_false_inside() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "model.py", line 40, in <module>\n'
        "    model = init_model(nnx.Rngs(1))\n"
        "NotImplementedError: mutable hitypes should use lo_ty_qdd instead\n"
    )
    crash = diagnosed_as(text, "unsupported_op", "unsupported_op/hijax_mutable_jit_output")
    assert "hijax=False" in crash.fix


def test_tf_function_variables_after_the_first_call_name_model_build() -> None:
    text = (
        '  File "train.py", line 88, in train_step\n'
        "    opt.apply_gradients(zip(grads, model.trainable_variables))\n"
        "ValueError: tf.function only supports singleton tf.Variables created on the first call. "
        "Make sure the tf.Variable is only created once or created outside tf.function.\n"
    )
    crash = diagnosed_as(text, "unsupported_op", "unsupported_op/tf_function_variables_after_first_call")
    assert "model.build" in crash.fix


def test_a_tensorflow_proto_over_2gb_names_the_proto_and_proto_splitting() -> None:
    text = "ValueError: Message tensorflow.MetaGraphDef exceeds maximum protobuf size of 2GB: 2315"
    crash = diagnosed_as(text, "unsupported_op", "unsupported_op/tensorflow_proto_over_2gb")
    assert "tensorflow.MetaGraphDef" in crash.fix
    assert "experimental_image_format=True" in crash.fix


def test_another_proto_over_the_limit_gets_the_general_fix() -> None:
    text = (
        "DecodeError: Error parsing message as the message exceeded the protobuf limit with type "
        "'jax.ExportedModule'"
    )
    crash = diagnosed_as(text, "unsupported_op", "unsupported_op/proto_over_2gb")
    assert "jax.ExportedModule" in crash.fix


def test_a_spawned_process_segfault_asks_to_build_the_model_once() -> None:
    text = (
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGSEGV\n"
    )
    crash = diagnosed_as(text, "host_oom", "host_oom/spawned_process_segfault")
    assert "notebook_launcher(training_function, (model,))" in crash.fix


def test_a_spawned_process_sigkill_keeps_its_own_fix() -> None:
    diagnosed_as(
        "ProcessExitedException: process 0 terminated with signal SIGKILL",
        "host_oom",
        "host_oom/spawned_process_killed",
    )


def test_a_saxml_extra_input_the_model_lacks_is_named() -> None:
    text = (
        "StatusNotOk: rpc error: code = InvalidArgument desc = key per_example_top_p in RPC\n"
        "request's extra_inputs field is not in ServableModel.extra_inputs.extra_inputs\n"
        "in ServableModel are {'temperature': 0.5} [INVALID_ARGUMENT]\n"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/saxml_extra_input_not_declared")
    assert "per_example_top_p" in crash.fix
    assert "EXTRA_INPUTS" in crash.fix


def test_a_debug_nans_stop_points_at_jax_debug_print_and_the_input_range() -> None:
    text = (
        "Invalid nan value encountered in the output of a C++-jit/pmap function. "
        "Calling the de-optimized version.\n"
        "FloatingPointError: invalid value (nan) encountered in jit(log). Because "
        "jax_config.debug_nans.value and/or config.jax_debug_infs is set, "
        "the de-optimized function was called.\n"
    )
    crash = diagnose_log(text, "train.log")
    assert crash.category == "unknown"
    assert "jax_debug_nans_invalid_value" in crash.evidence.fix_rule
    assert "jax.debug.print" in crash.fix
    assert "normalize" in crash.fix
