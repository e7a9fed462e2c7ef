"""torch.compile refusals people paste: Dynamo's graph breaks by construct (an op with a data-dependent
output shape, a tensor read into a Python number, a function Dynamo skips, an op without a fake kernel, a
custom kernel reading a fake tensor's data, a condition on a data-dependent size, any other graph-break type),
its own internal errors and FX tracing of a compiled function, a kernel missing at the tensors' dispatch key
(under Inductor or not), a TPU backend name nothing registered, the recompile limit and the fail_on_recompile
stance, and wrapped inner errors (TorchRuntimeError, BackendCompilerFailed) placed by the inner error.

The wordings are torch 2.13's ("<graph-break type>" then "Explanation:" and "Hint:" lines) and the one-line
wordings of older releases, with other values than the rules' comments; the assertions check the category, the
sub-rule and what the fix names, and each family has a nearby wording it must not claim.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed
from tests.crash_helpers import diagnose_rules_alone as _diagnose
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        # an op with a data-dependent output shape, torch 2.13 and older
        (
            "torch._dynamo.exc.Unsupported: Dynamic shape operator\n"
            "  Explanation: Operator `aten.unique_consecutive.default`'s output shape depends on input "
            "Tensor data.\n"
            "  Hint: Enable tracing of dynamic shape operators with "
            "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`\n"
            "\n"
            "  Developer debug context: aten.unique_consecutive.default",
            "unsupported_op",
            "dynamo_dynamic_shape_op",
            "tpu-agent ops show aten::unique_consecutive",
        ),
        (
            "torch._dynamo.exc.Unsupported: dynamic shape operator: aten.masked_select.default; to enable, "
            "set torch._dynamo.config.capture_dynamic_output_shape_ops = True",
            "unsupported_op",
            "dynamo_dynamic_shape_op",
            "aten.masked_select.default",
        ),
        # a tensor read into a Python number
        (
            "torch._dynamo.exc.Unsupported: Data dependent operator\n"
            "  Explanation: Operator `aten.equal.default` has a non-Tensor output whose value is dependent "
            "on the data of Tensor inputs.\n"
            "  Hint: Consider wrapping the operator into a PyTorch-understood custom operator (see "
            "https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html)",
            "unsupported_op",
            "dynamo_scalar_output",
            "aten.equal.default",
        ),
        (
            "torch._dynamo.exc.Unsupported: data dependent operator: aten.item.default; to enable, set "
            "torch._dynamo.config.capture_scalar_outputs = True",
            "unsupported_op",
            "dynamo_scalar_output",
            "capture_scalar_outputs = True",
        ),
        (
            "torch._dynamo.exc.Unsupported: Unsupported Tensor.item() call with "
            "capture_scalar_outputs=False\n"
            "  Explanation: Dynamo does not support tracing `Tensor.item()` with "
            "config.capture_scalar_outputs=False.\n"
            "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` ",
            "unsupported_op",
            "dynamo_scalar_output",
            "TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1",
        ),
        (
            "W0311 08:14:02.117000 4412 torch/_dynamo/variables/tensor.py:1002] [2/1] Graph break from "
            "`Tensor.item()`, consider setting:\n"
            "W0311 08:14:02.117000 4412 torch/_dynamo/variables/tensor.py:1002] [2/1]     "
            "torch._dynamo.config.capture_scalar_outputs = True",
            "unsupported_op",
            "dynamo_scalar_output",
            "capture_scalar_outputs",
        ),
        # a function Dynamo does not trace: skipped on purpose, a C extension, a builtin
        (
            "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n"
            "  Explanation: Dynamo developers have intentionally marked that the function `shuffle` in file "
            "`/usr/lib/python3.11/random.py` should not be traced.\n"
            "  Hint: Avoid calling the function `shuffle`.",
            "unsupported_op",
            "dynamo_skipped_function",
            "`shuffle`",
        ),
        (
            "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n"
            "  Explanation: Dynamo does not know how to trace the builtin `faiss._swigfaiss.knn.` This "
            "function is either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python "
            "extension (perhaps created with pybind).",
            "unsupported_op",
            "dynamo_skipped_function",
            "faiss._swigfaiss.knn",
        ),
        (
            "UserWarning: Graph break due to unsupported builtin cupy._core.core.array. This function is "
            "either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps "
            "created with pybind).",
            "unsupported_op",
            "dynamo_skipped_function",
            "cupy._core.core.array",
        ),
        (
            "torch._dynamo.exc.Unsupported: Failed to trace builtin operator\n"
            "  Explanation: Dynamo does not know how to trace builtin operator `input` with argument types "
            "['str'] (has_kwargs False)",
            "unsupported_op",
            "dynamo_skipped_function",
            "`input`",
        ),
        # an op without a fake (meta) kernel, and a custom kernel reading a fake tensor's data
        (
            "torch._dynamo.exc.Unsupported: Operator does not support running with fake tensors\n"
            "  Explanation: \n"
            "  Developer debug context: unsupported operator: mylib.fused_rope.default",
            "unsupported_op",
            "dynamo_op_without_fake_kernel",
            "mylib.fused_rope.default",
        ),
        (
            "RuntimeError: Cannot access data pointer of Tensor (e.g. FakeTensor, FunctionalTensor). If "
            "you're using torch.compile/export/fx, it is likely that we are erroneously tracing into a "
            "custom kernel.",
            "unsupported_op",
            "fake_tensor_data_pointer",
            "register_fake",
        ),
        # an op with neither a Meta kernel nor a fake implementation, met on meta or fake tensors
        (
            "NotImplementedError: mylib::ragged_gather: attempted to run this operator with Meta tensors, "
            "but there was no fake impl or Meta kernel registered. You may have run into this message while "
            "using an operator with PT2 compilation APIs (torch.compile/torch.export)",
            "unsupported_op",
            "op_without_meta_kernel",
            "mylib::ragged_gather",
        ),
        # a condition on a size known only at run time
        (
            "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on "
            "data-dependent expression Ne(u3, 0) (unhinted: Ne(u3, 0)).  (Size-like symbols: none)",
            "unsupported_op",
            "dynamo_data_dependent_guard",
            "Ne(u3, 0)",
        ),
        (
            "torch._dynamo.exc.UserError: Could not extract specialized integer from data-dependent "
            "expression u7 (unhinted: u7).  (Size-like symbols: u7)",
            "unsupported_op",
            "dynamo_data_dependent_guard",
            "torch._check_is_size",
        ),
        # any other graph-break type, with the setting the message names or without one
        (
            "torch._dynamo.exc.Unsupported: Module-level backwards hooks require compiled autograd.\n"
            "  Explanation: \n"
            "  Hint: Enable compiled autograd by setting torch._dynamo.config.compiled_autograd = True.",
            "unsupported_op",
            "dynamo_config_named",
            "torch._dynamo.config.compiled_autograd = True",
        ),
        (
            "torch._dynamo.exc.Unsupported: attempted to trace contextlib.contextmanager\n"
            "  Explanation: Tracing contextlib.contextmanager is disabled.\n"
            "  Hint: Set torch._dynamo.config.enable_trace_contextlib = True",
            "unsupported_op",
            "dynamo_config_named",
            "enable_trace_contextlib",
        ),
        (
            "torch._dynamo.exc.Unsupported: attempted to trace numpy function with config.trace_numpy=False\n"
            "  Explanation: Attempted to trace numpy function <function argsort> while "
            "`torch._dynamo.config.trace_numpy` was set to False.\n"
            "  Hint: Set `torch._dynamo.config.trace_numpy` to True to trace numpy functions.",
            "unsupported_op",
            "dynamo_config_named",
            "torch._dynamo.config.trace_numpy = True",
        ),
        (
            "torch._dynamo.exc.Unsupported: attempted to trace torch._numpy.random function with "
            "config.use_numpy_random_stream=True\n"
            "  Explanation: Attempted to trace <function normal> when "
            "`torch._dynamo.config.use_numpy_random_stream` is set to True.\n"
            "  Hint: Set `torch._dynamo.config.use_numpy_random_stream` to False.",
            "unsupported_op",
            "dynamo_config_named",
            "torch._dynamo.config.use_numpy_random_stream = False",
        ),
        (
            "torch._dynamo.exc.Unsupported: Unsupported method call\n"
            "  Explanation: Dynamo does not know how to trace method `__contains__` of class `dict_keys`",
            "unsupported_op",
            "dynamo_graph_break",
            "method `__contains__` of class `dict_keys`",
        ),
        # a whole torch 2.13 traceback: the user line Dynamo names under "from user code:" is quoted
        (
            "Traceback (most recent call last):\n"
            '  File "/srv/jobs/run.py", line 12, in <module>\n'
            "    out = compiled(batch)\n"
            "torch._dynamo.exc.Unsupported: Unsupported context manager\n"
            "  Explanation: Dynamo does not know how to enter a `Lock` context manager.\n"
            "  Hint: Avoid using the unsupported context manager.\n"
            "\n"
            "  Developer debug context: Attempted SETUP_WITH/BEFORE_WITH on ConstantVariable\n"
            "\n"
            "from user code:\n"
            '   File "/srv/jobs/net.py", line 117, in forward\n'
            "    with self.lock:\n",
            "unsupported_op",
            "dynamo_graph_break",
            "/srv/jobs/net.py:117",
        ),
        # Dynamo's own failure, and FX tracing a compiled function
        (
            "torch._dynamo.exc.InternalTorchDynamoError: KeyError: 'attention_mask'",
            "unsupported_op",
            "dynamo_internal_error",
            "KeyError: 'attention_mask'",
        ),
        (
            "RuntimeError: Detected that you are using FX to symbolically trace a dynamo-optimized function. "
            "This is not supported at the moment.",
            "unsupported_op",
            "fx_trace_of_compiled_function",
            "_orig_mod",
        ),
        # a kernel missing at the tensors' dispatch key, under Inductor (the wrong backend) and without it
        (
            "torch._inductor.exc.InductorError: LoweringException: NotImplementedError: could not find "
            "kernel for aten.scatter_reduce.two at dispatch key DispatchKey.AutogradXLA",
            "unsupported_op",
            "inductor_on_device_tensors",
            'backend="openxla"',
        ),
        (
            "NotImplementedError: could not find kernel for aten.bucketize.Tensor at dispatch key "
            "DispatchKey.PrivateUse1",
            "unsupported_op",
            "dispatch_key_missing_kernel",
            "tpu-agent ops show aten::bucketize.Tensor",
        ),
        # the recompile limit without the warning that names the function, and the fail_on_recompile stance
        (
            "torch._dynamo.exc.Unsupported: Dynamo recompile limit exceeded\n"
            "  Explanation: Dynamo attempted to recompile the code object too many times, exceeding the "
            "recompile_limit cache size limit (currently set to 16). Excessive recompilations can degrade "
            "performance due to the compilation overhead of each recompilation.",
            "recompilation",
            "dynamo_recompile_limit",
            "torch._dynamo.config.recompile_limit = 16",
        ),
        (
            "torch._dynamo.exc.FailOnRecompileLimitHit: Hard failure due to fullgraph=True",
            "recompilation",
            "dynamo_recompile_limit",
            "TORCH_LOGS=recompiles",
        ),
        (
            "RuntimeError: Detected recompile when torch.compile stance is 'fail_on_recompile'. filename: "
            "'/srv/app/infer.py', function name: 'decode_step', line number: 88",
            "recompilation",
            "dynamo_fail_on_recompile_stance",
            "decode_step",
        ),
        # a TPU backend name nothing registered: torch_tpu missing or not loaded
        (
            "torch._dynamo.exc.InvalidBackend: Invalid backend: 'tpu', see `torch._dynamo.list_backends()` "
            "for available backends.",
            "version_mismatch",
            "compile_backend_not_registered",
            "import torch_tpu",
        ),
        (
            "torch._dynamo.exc.InvalidBackend: Invalid backend: 'xla', see `torch._dynamo.list_backends()` "
            "for available backends.",
            "version_mismatch",
            "compile_backend_not_registered",
            "'xla'",
        ),
        # wrapped inner errors: the shape error under TorchRuntimeError, in both releases' wordings
        (
            "torch._dynamo.exc.TorchRuntimeError: Failed running call_function <built-in method matmul of "
            "type object at 0x7f>(*(FakeTensor(..., size=(8, 384)), FakeTensor(..., size=(768, 64))), "
            "**{}):\n"
            "a and b must have same reduction dim, but got [8, 384] X [768, 64].",
            "shape_dtype_error",
            "matmul_inner_size",
            "(384) must equal the first size of the right (768)",
        ),
        (
            "torch._dynamo.exc.TorchRuntimeError: RuntimeError when making fake tensor call\n"
            "  Explanation: Dynamo failed to run FX node with fake tensors: call_function <built-in function "
            "cat>(*([FakeTensor(..., size=(2, 3)), FakeTensor(..., size=(2, 3), dtype=torch.int64)],), "
            "**{}): got RuntimeError('Tensors must have same number of dimensions: got 2 and 3')",
            "shape_dtype_error",
            "dynamo_traced_call_failed",
            "<built-in function cat>",
        ),
        # the TPU backend failing to compile, the inner error naming nothing more specific
        (
            "torch._dynamo.exc.BackendCompilerFailed: backend='tpu' raised:\n"
            "RuntimeError: torch_tpu/csrc/compiler.cc:88 Check failed: module.ok()",
            "xla_compile_error",
            "dynamo_backend_compiler_failed",
            'backend="aot_eager"',
        ),
    ],
)
def test_torch_compile_wordings(text: str, category: str, sub_rule: str, named: str) -> None:
    assert_fixed_by(text, category, sub_rule, named)


@pytest.mark.parametrize(
    ("text", "not_sub_rule"),
    [
        # a shape check that says "dynamic shape" is not Dynamo's dynamic-shape operator
        (
            "ValueError: dynamic shape dimension -1 is not allowed in the static input signature",
            "dynamo_dynamic_shape_op",
        ),
        # an .item() outside torch.compile, in PyTorch/XLA's profiler counters, is not a graph break
        (
            "pt-xla-profiler: TransferFromDeviceTime too frequent: 40 counts during 10 steps",
            "dynamo_scalar_output",
        ),
        # a module that is not installed is not a function Dynamo skips
        ("ModuleNotFoundError: No module named 'faiss'", "dynamo_skipped_function"),
        # another tensor's data pointer refused for a tensor without storage, outside any tracing
        (
            "RuntimeError: Cannot access data pointer of Tensor that doesn't have storage",
            "fake_tensor_data_pointer",
        ),
        # a jax tracer branching on a value is jax's refusal, not Dynamo's data-dependent guard
        (
            "jax.errors.TracerBoolConversionError: Attempted boolean conversion of traced array with shape "
            "bool[].",
            "dynamo_data_dependent_guard",
        ),
        # torch.fx tracing a plain module that branches on an input is not tracing a compiled function
        (
            "torch.fx.proxy.TraceError: symbolically traced variables cannot be used as inputs to control "
            "flow",
            "fx_trace_of_compiled_function",
        ),
        # the dispatcher's refusal of the Meta key and nonzero's data-dependent meta kernel are other sites
        (
            "NotImplementedError: Could not run 'aten::_unique2' with arguments from the 'Meta' backend.",
            "op_without_meta_kernel",
        ),
        (
            "NotImplementedError: The register_meta function for torch.nonzero() raises unimplemented by "
            "default, as a correct data-independent implementation does not exist.",
            "op_without_meta_kernel",
        ),
        # the dispatcher's other wording has its own sub-rule
        (
            "NotImplementedError: Could not run 'aten::_fft_r2c' with arguments from the 'XLA' backend.",
            "dispatch_key_missing_kernel",
        ),
        # a Mosaic lowering failure wrapped as LoweringException stays a Mosaic error
        (
            "jax._src.pallas.mosaic.lowering.LoweringException: NotImplementedError: Unsupported layout for "
            "shape cast",
            "inductor_on_device_tensors",
        ),
        # a recompile limit with the warning that names the function and guard keeps the guard's sub-rule
        (
            "W1205 torch/_dynamo/convert_frame.py:844] torch._dynamo hit config.recompile_limit (8)\n"
            "   function: 'step' (train.py:40)\n"
            "   last reason: 0/0: tensor 'L['batch']' size mismatch at index 0. expected 32, actual 17",
            "dynamo_recompile_limit",
        ),
        # a plain eager matmul error names no traced call
        (
            "RuntimeError: The size of tensor a (7) must match the size of tensor b (4) at non-singleton "
            "dimension 1",
            "dynamo_traced_call_failed",
        ),
        # a backend name of another accelerator is no missing TPU package
        (
            "torch._dynamo.exc.InvalidBackend: Invalid backend: 'tensorrt', see "
            "`torch._dynamo.list_backends()` for available backends.",
            "compile_backend_not_registered",
        ),
        # a backend other than the TPU's failing on a CUDA-only path
        (
            "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
            "RuntimeError: Found Tesla T4 which is too old to be supported by the triton GPU compiler",
            "dynamo_backend_compiler_failed",
        ),
    ],
)
def test_nearby_wording_is_not_claimed(text: str, not_sub_rule: str) -> None:
    assert_not_claimed(text, not_sub_rule)


def test_backend_failure_is_placed_by_its_inner_error() -> None:
    """BackendCompilerFailed only wraps: an inner error a rule knows decides the category (here a memory
    error), and the wrapper's weak vote does not override it."""
    crash = _diagnose(
        "torch._dynamo.exc.BackendCompilerFailed: backend='openxla' raised:\n"
        "RuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory "
        "space hbm. Used 19.4G of 15.48G hbm. Exceeded hbm capacity by 3.92G."
    )
    assert crash.category == "hbm_oom"


def test_message_states_setting_after_a_colon_or_a_purpose_clause() -> None:
    """The suggestion reader takes "to enable, set X" (a purpose clause without an object) and advice ending
    in a colon whose object is indented on the next line."""
    inline = find_suggestions(
        ["Unsupported: foo operator: lib.op.default; to enable, set torch.lib.config.allow_foo = True"]
    )
    assert inline and "torch.lib.config.allow_foo" in inline[0].named
    wrapped = find_suggestions(
        ["W0101 Graph break from `x.tolist()`, consider setting:", "    lib.config.capture_lists = True"]
    )
    assert wrapped and "lib.config.capture_lists" in wrapped[0].named
    # an unindented next line is another message, not the advice's object
    separate = find_suggestions(
        ["Graph break from `x.tolist()`, consider setting:", "lib.config.capture_lists = True"]
    )
    assert not any("lib.config.capture_lists" in s.named for s in separate)
