"""Values a message states that name the fix (gm66): a compiled batch size and the smaller one a call gave,
a value an enumeration lacks, a torch custom op not registered, an NNX attribute holding data while static,
a tokenizer that could not be loaded, an argument of another class, and a size setting a launcher chose by
default (`tpu_runtime/diagnose/crash_value_facts.py`, `crash_fix_packs/named_values.yaml`). Wordings
written for these tests; each reader has a nearby wording that must give nothing."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_setting_facts import size_setting_facts
from tpu_runtime.diagnose.crash_value_facts import (
    argument_type_facts,
    custom_op_facts,
    enum_value_facts,
    missing_tokenizer_facts,
    nnx_static_data_facts,
    partial_batch_facts,
    snake_case,
)
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, load_rules
from tpu_runtime.diagnose.similar_errors import SimilarErrors


def _fallbacks_only(text: str):  # type: ignore[no-untyped-def]
    return diagnose_log(text, "-", fallback_rules(load_rules()), SimilarErrors(()))


def test_a_smaller_leading_dimension_is_a_partial_batch() -> None:
    line = (
        "RuntimeError: program expects f32[32,77,512]{2,1,0} on input 1, but was given f32[20,77,512]{2,1,0}"
    )
    assert partial_batch_facts([line]) == {
        "batch_compiled": 32,
        "batch_given": 20,
        "batch_shape": "(32, 77, 512)",
    }
    assert (
        partial_batch_facts(["got a tensor of shape (3, 64) where the step expected (16, 64)"])["batch_given"]
        == 3
    )


@pytest.mark.parametrize(
    "line",
    [
        "program expects f32[32,77,512] on input 1, but was given f32[32,76,512]",  # another dimension
        "program expects f32[32,77,512] on input 1, but was given f32[40,77,512]",  # a larger batch
        "program expects f32[32] on input 1, but was given f32[20]",  # one dimension: not surely a batch
    ],
)
def test_other_shape_differences_are_no_partial_batch(line: str) -> None:
    assert partial_batch_facts([line]) == {}


def test_the_partial_batch_fix_names_the_compiled_size() -> None:
    crash = _fallbacks_only(
        "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Executable expected shape f32[32,77,512] "
        "for argument 2 but got incompatible shape f32[20,77,512]\n"
    )
    assert crash.evidence.fix_rule == "shape_dtype_error/from_facts_partial_batch"
    assert "keep every batch at 32" in crash.fix and "drop_remainder=True" in crash.fix


def test_a_value_the_enumeration_lacks_names_the_setting_of_its_type() -> None:
    assert enum_value_facts(["ValueError: 'TURBO' is not a valid ComputeMode"]) == {
        "enum_value": "TURBO",
        "enum_class": "ComputeMode",
        "enum_setting": "compute_mode",
    }
    bare = enum_value_facts(["ValueError: halfway is not a valid SaveCadence, please select one of ['no']"])
    assert bare["enum_value"] == "halfway" and bare["enum_setting"] == "save_cadence"
    assert snake_case("HTTPMode") == "http_mode"
    # a lowercase word after "a valid" is no class: a value's property, not an enumeration
    assert enum_value_facts(["ValueError: 'abc' is not a valid integer"]) == {}


def test_the_enum_fix_names_value_class_and_setting() -> None:
    crash = _fallbacks_only(
        'Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
        "ValueError: 'TURBO' is not a valid ComputeMode\n"
    )
    assert crash.evidence.fix_rule.endswith("/from_facts_enum_value")
    assert "'TURBO' is not a member of ComputeMode" in crash.fix and "Set compute_mode" in crash.fix


def test_an_unregistered_custom_op_names_its_namespace_and_module() -> None:
    found = custom_op_facts(["AttributeError: '_OpNamespace' 'xla' object has no attribute 'ragged_mix'"])
    assert found["custom_op"] == "xla::ragged_mix"
    assert found["custom_op_module"] == "torch_xla.experimental.custom_kernel"
    other = custom_op_facts(["RuntimeError: No such operator sprocket::fused_norm"])
    assert other == {"custom_op": "sprocket::fused_norm", "custom_op_namespace": "sprocket"}
    assert custom_op_facts(["AttributeError: 'Sprocket' object has no attribute 'ragged_mix'"]) == {}


def test_nnx_static_data_is_read_across_a_line_break() -> None:
    lines = [
        "ValueError: Found unexpected data on value of type <class 'tuple'> in static attribute",
        "'gear_tables' of Pytree type 'sprocket.Gearbox'.",
    ]
    assert nnx_static_data_facts(lines) == {"nnx_attribute": "gear_tables", "nnx_value_type": "tuple"}
    assert nnx_static_data_facts(["Found unexpected data in gear_tables"]) == {}


def test_a_tokenizer_that_could_not_be_loaded() -> None:
    assert missing_tokenizer_facts(["OSError: Can't load tokenizer for 'acme/sprocket-7b'. If you were"]) == {
        "tokenizer_of": "acme/sprocket-7b"
    }
    assert missing_tokenizer_facts(["OSError: Can't load config for 'acme/sprocket-7b'."]) == {}


def test_an_argument_of_another_class() -> None:
    line = "ValueError: Expected ids to be RaggedTensor type but got <class 'tf.python.framework.ops.Tensor'>"
    assert argument_type_facts([line]) == {
        "typed_argument": "ids",
        "required_type": "RaggedTensor",
        "given_type": "Tensor",
    }
    # a property, not a class, and the same class on both sides give nothing
    assert argument_type_facts(["ValueError: Expected rate to be positive but got -1"]) == {}
    assert argument_type_facts(["Expected ids to be RaggedTensor but got RaggedTensor"]) == {}


def test_a_size_setting_the_launcher_chose_by_default() -> None:
    lines = [
        "INFO launcher: Default `max_total_tokens` to 16000",
        "INFO launcher: page_size not set, defaulting to 64",
        "INFO launcher: Default `revision` to main",  # not a size: not read
    ]
    found = size_setting_facts(lines)["size_settings"]
    assert "max_total_tokens = 16000 (chosen by default)" in found
    assert "page_size = 64 (chosen by default)" in found and "revision" not in found
