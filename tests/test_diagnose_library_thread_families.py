"""Families of wording from library threads on TPU that round diag50 added to the rules.

Six families: a torch custom-op namespace without the op a caller asks of it (PyTorch/XLA's Pallas ops are
registered only when their module is imported; a CUDA kernel library is not built for TPU), jax.jit refusing
the abstracted_axes argument that jax 0.8.2 removed and libraries written for older releases still pass,
a private submodule of an installed package that the installed release does not have, a backend class
(an executor, worker or communicator) that lacks a method its base class of another commit declares
abstract, torch_xla's view tracking refusing a `.data` reassignment to another size, and a TPU matrix
decomposition of a release without complex support refusing a complex matrix. Each case is
another wording of its family (other ops, packages, callers), and each family has a nearby wording it must
not claim. The assertions check the category, the sub-rule chosen and what the fix names, so a rule
matching only the collected log's exact text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "op"),
    [
        (
            "AttributeError: '_OpNamespace' 'xla' object has no attribute 'ragged_paged_attention'",
            "ragged_paged_attention",
        ),
        (
            "E       AttributeError: '_OpNamespace' 'xla' object has no attribute 'quantized_matmul_int8'",
            "quantized_matmul_int8",
        ),
    ],
)
def test_a_torch_xla_custom_op_called_before_its_module_is_imported(text: str, op: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "unsupported_op", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "unsupported_op/torch_xla_custom_op_not_registered"
    assert f"torch.ops.xla.{op}" in crash.fix
    assert "import torch_xla.experimental.custom_kernel" in crash.fix


def test_a_cuda_kernel_namespace_without_its_op_names_the_namespace() -> None:
    crash = _diagnose("AttributeError: '_OpNamespace' '_moe_C' object has no attribute 'topk_softmax'")
    assert crash.category == "unsupported_op", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "unsupported_op/torch_custom_op_library_not_loaded"
    assert "torch.ops._moe_C has no topk_softmax" in crash.fix
    assert "custom_kernel" not in crash.fix


def test_a_module_without_the_attribute_is_not_read_as_an_op_namespace() -> None:
    """A Python module missing a name is an API of another release; the op-namespace sub-rules are for
    torch.ops namespaces."""
    crash = _diagnose("AttributeError: module 'torch_xla' has no attribute 'gmm'")
    assert crash.evidence.fix_rule not in {
        "unsupported_op/torch_xla_custom_op_not_registered",
        "unsupported_op/torch_custom_op_library_not_loaded",
    }


@pytest.mark.parametrize(
    "text",
    [
        '  File "/env/lib/python3.12/site-packages/jaxlie/utils/_utils.py", line 56, in register_lie_group\n'
        "TypeError: jit() got an unexpected keyword argument 'abstracted_axes'",
        "TypeError: jax.jit() got an unexpected keyword argument 'abstracted_axes'",
    ],
)
def test_a_library_passing_the_removed_abstracted_axes_gets_the_release_pin(text: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_jit_abstracted_axes_removed"
    assert "0.8.1" in crash.fix
    assert "abstracted_axes" in crash.fix


def test_another_refused_jit_argument_is_not_read_as_abstracted_axes() -> None:
    """An argument jax.jit never had (or renamed) keeps the general signature remedy."""
    crash = _diagnose("TypeError: jit() got an unexpected keyword argument 'donate_argnames'")
    assert crash.evidence.fix_rule != "version_mismatch/jax_jit_abstracted_axes_removed"
    assert "0.8.1" not in crash.fix


@pytest.mark.parametrize(
    ("text", "package", "module"),
    [
        (
            "ModuleNotFoundError: No module named 'qwix._src.core.ragged_dot'",
            "qwix",
            "qwix._src.core.ragged_dot",
        ),
        (
            "ModuleNotFoundError: No module named 'orbax.checkpoint._src.handlers.standard_handler'",
            "orbax",
            "orbax.checkpoint._src.handlers.standard_handler",
        ),
    ],
)
def test_a_private_submodule_missing_from_the_installed_release(text: str, package: str, module: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/private_submodule_of_other_release"
    assert f"{module} is a private module of {package}" in crash.fix
    assert f"Upgrade {package}" in crash.fix


@pytest.mark.parametrize(
    "text",
    [
        # vLLM's start-up warning repeats a ModuleNotFoundError's repr for a CUDA extension absent on TPU
        "WARNING 04-30 01:10:24 [interface.py:240] Failed to import from vllm._moe_C: "
        "ModuleNotFoundError(\"No module named 'vllm._moe_C'\")",
        # a package that is not installed at all: no private module of another release
        "ModuleNotFoundError: No module named 'qwix'",
        # a public submodule (no `_` segment)
        "ModuleNotFoundError: No module named 'keras_hub.src.models'",
    ],
)
def test_a_missing_package_or_a_warning_repr_is_not_read_as_a_private_submodule(text: str) -> None:
    crash = _diagnose(text)
    assert crash.evidence.fix_rule != "version_mismatch/private_submodule_of_other_release"


@pytest.mark.parametrize(
    ("text", "cls", "methods"),
    [
        (
            "TypeError: Can't instantiate abstract class TPUWorker without an implementation for abstract "
            "methods 'compile_or_warm_up_model', 'get_kv_cache_spec'",
            "TPUWorker",
            "'compile_or_warm_up_model', 'get_kv_cache_spec'",
        ),
        (
            "TypeError: Can't instantiate abstract class TpuCommunicator with abstract methods "
            "all_gather, all_reduce",
            "TpuCommunicator",
            "all_gather, all_reduce",
        ),
        (
            "TypeError: Can't instantiate abstract class NeuronExecutor with abstract method remove_lora",
            "NeuronExecutor",
            "remove_lora",
        ),
    ],
)
def test_a_backend_class_without_a_method_its_base_declares_abstract(
    text: str, cls: str, methods: str
) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/backend_class_missing_abstract_method"
    assert f"{cls} does not implement {methods}" in crash.fix
    assert f"Upgrade the package that defines {cls}" in crash.fix


def test_a_users_own_abstract_class_is_not_read_as_a_backend_skew() -> None:
    """A model or layer of the user's own code that misses a method is that code's bug, not two releases."""
    crash = _diagnose("TypeError: Can't instantiate abstract class MyModel with abstract method forward")
    assert crash.evidence.fix_rule != "version_mismatch/backend_class_missing_abstract_method"
    assert "Upgrade the package that defines" not in crash.fix


@pytest.mark.parametrize(
    ("text", "new", "old"),
    [
        (
            "RuntimeError: torch_xla/csrc/tensor.cpp:652 : Check failed: xla::util::Multiply<xla::int64>"
            "(ir_value.shape().dimensions()) == xla::util::Multiply<xla::int64>(view->shape().dimensions()) "
            "(4096 vs. 8192)",
            "4096",
            "8192",
        ),
        (
            "RuntimeError: torch_xla/csrc/tensor.cpp:790 : Check failed: runtime::util::Multiply<int64_t>"
            "(ir_value.shape().dimensions()) == runtime::util::Multiply<int64_t>(view->shape().dimensions()) "
            "(5 vs. 10)",
            "5",
            "10",
        ),
    ],
)
def test_torch_xla_refusing_a_data_reassignment_to_another_size(text: str, new: str, old: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/torch_xla_view_update_element_count"
    assert f"a new value of {new} elements for a view of {old}" in crash.fix
    assert "Upgrade torch_xla" in crash.fix


def test_the_view_lowering_check_is_not_read_as_the_data_reassignment() -> None:
    """aten::view's lowering check (the program asks for a view of another element count) is a shape error
    of the program, not the view tracking of an older torch_xla."""
    crash = _diagnose(
        "RuntimeError: Error while lowering: s32[1,1,49,49]{3,2,1,0} aten::view, output_size=(1, 1, 49, 49)\n"
        "Error: torch_xla/csrc/data_ops.cpp:37 : Check failed: total_element_count == "
        "xla::util::Multiply<xla::int64>(output_sizes) (614656 vs. 2401)"
    )
    assert crash.evidence.fix_rule != "version_mismatch/torch_xla_view_update_element_count"
    assert "view tracking" not in crash.fix


@pytest.mark.parametrize(
    ("text", "dtype", "dims"),
    [
        (
            "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Type of the input matrix must be float: "
            "got c128[4,64,64].",
            "c128",
            "4,64,64",
        ),
        (
            "RuntimeError: Invalid argument: Type of the input matrix must be float: got c64[256,256].:",
            "c64",
            "256,256",
        ),
    ],
)
def test_a_complex_matrix_refused_by_the_tpu_decomposition(text: str, dtype: str, dims: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "unsupported_op", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "unsupported_op/complex_matrix_decomposition_on_tpu"
    assert f"a complex {dtype}[{dims}] matrix" in crash.fix
    assert "Upgrade jax" in crash.fix
    assert "backend='cpu'" in crash.fix


def test_an_integer_matrix_refused_is_not_read_as_missing_complex_support() -> None:
    """An integer input is the program's dtype to cast, not a decomposition a newer jax adds."""
    crash = _diagnose(
        "RuntimeError: Invalid argument: Type of the input matrix must be float: got s32[3,3].:"
    )
    assert crash.evidence.fix_rule != "unsupported_op/complex_matrix_decomposition_on_tpu"
    assert "Hermitian" not in crash.fix
