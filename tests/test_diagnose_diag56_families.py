"""Families of wording that round diag56 added to the rules: TorchTPU's kernel wrappers and its profiler.

TorchTPU's `pallas.jax_op` checks the JAX function's annotations and refuses types other than jax.Array and
POD types ("Invalid signature for JAX function: <signature>. Arguments at indices [...] are invalid. Only
jax.Arrays and POD types are supported."): `torch_tpu_jax_op_signature` names the refused positions. A wrapped
kernel refuses a Python value at a traced position ("custom kernels only support torch.Tensor and None
inputs, but input N was of type ...": `torch_tpu_kernel_non_tensor_input`) and a tensor at a static one
("Argument at index N is marked as static but is a torch.Tensor": `torch_tpu_kernel_static_tensor`), each
naming the position.
Its `profiler.profile` has no default trace folder ("on_trace_ready must be provided for profiler.profile":
`torch_tpu_profile_without_trace_handler`, the XProf handler).

Each case is another wording of its family (other positions, types and signatures than the corpus files), and
each family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail
here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_a_jax_op_whose_return_annotation_is_refused() -> None:
    crash = assert_fixed_by(
        "ValueError: Invalid signature for JAX function: (q: jax.Array, k: jax.Array, cfg: MyConfig) -> "
        "list[jax.Array]. Arguments at indices [2] are invalid. The return annotation is invalid. Only "
        "jax.Arrays and POD types are supported.",
        "unsupported_op",
        "torch_tpu_jax_op_signature",
        "functools.partial",
    )
    assert "indices 2" in crash.fix


def test_a_jax_op_refused_for_its_return_type_alone_names_no_position() -> None:
    crash = assert_fixed_by(
        "ValueError: Invalid signature for JAX function: (x: jax.Array) -> MyCustomType. The return "
        "annotation is invalid. Only jax.Arrays and POD types are supported.",
        "unsupported_op",
        "torch_tpu_jax_op_signature",
        "return annotation",
    )
    assert "indices" not in crash.fix


def test_a_signature_error_of_another_library_is_not_a_jax_op_refusal() -> None:
    assert_not_claimed(
        "TypeError: Invalid signature for function 'forward': expected (self, x), got (self, x, y)",
        "torch_tpu_jax_op_signature",
    )


def test_a_python_float_given_to_a_traced_kernel_input() -> None:
    crash = assert_fixed_by(
        "TypeError: custom kernels only support torch.Tensor and None inputs, but input 3 was of type "
        "<class 'float'>. Use static_argnums or functools.partial for non-tensor args.",
        "unsupported_op",
        "torch_tpu_kernel_non_tensor_input",
        "static_argnums",
    )
    assert "input 3" in crash.fix
    assert "<class 'float'>" in crash.fix


def test_jax_refusing_a_non_array_argument_is_not_the_kernel_wrapper() -> None:
    assert_not_claimed(
        "TypeError: Argument 'mode' of type <class 'str'> is not a valid JAX type.",
        "torch_tpu_kernel_non_tensor_input",
    )


def test_a_tensor_at_a_static_kernel_position() -> None:
    crash = assert_fixed_by(
        "ValueError: Argument at index 4 is marked as static but is a torch.Tensor. Tensors cannot be static "
        "arguments.",
        "unsupported_op",
        "torch_tpu_kernel_static_tensor",
        "static_argnums",
    )
    assert "index 4" in crash.fix


def test_jax_refusing_an_unhashable_static_argument_is_not_the_kernel_wrapper() -> None:
    assert_not_claimed(
        "ValueError: Non-hashable static arguments are not supported. An error occurred while trying to hash "
        "an object of type <class 'jaxlib.xla_extension.ArrayImpl'>, [1. 2.]. The error was:\n"
        "TypeError: unhashable type: 'ArrayImpl'",
        "torch_tpu_kernel_static_tensor",
    )


def test_profile_called_from_a_traceback_without_a_trace_handler() -> None:
    assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    with profiler.profile(activities=[profiler.ProfilerActivity.TPU]):\n"
        '  File "/usr/lib/python3.12/contextlib.py", line 137, in __enter__\n'
        "    return next(self.gen)\n"
        "ValueError: on_trace_ready must be provided for profiler.profile.",
        "runtime_init_failure",
        "torch_tpu_profile_without_trace_handler",
        "xprof_trace_handler",
    )


def test_torch_profiler_schedule_advice_is_not_the_missing_handler() -> None:
    assert_not_claimed(
        "UserWarning: on_trace_ready is deprecated in this context, use tensorboard_trace_handler instead",
        "torch_tpu_profile_without_trace_handler",
    )
