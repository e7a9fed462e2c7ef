"""Families of wording from training threads on TPU that round diag49 added to the rules.

Five families: TensorFlow refusing an op whose inputs have two dtypes (a mixed-precision policy on TPU leaves
some operands in float32 while the layer computes in bfloat16), a Pallas TPU attention kernel given a block
longer than the dimension it tiles, JAX's sharding-in-types check refusing an op whose operands are sharded
differently, a sharding constraint that asserts on a mesh of Explicit axes, and a library reading an
attribute the installed jaxlib's array or TPU buffer type lacks. Each
case is the collected wording or another wording of its family (not only the corpus file's text), and each
family has a nearby wording it must not claim. The assertions check the category, the sub-rule chosen and
what the fix names, so a rule matching only the collected log's exact text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by
from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "sub_rule", "named"),
    [
        (
            "InvalidArgumentError: cannot compute AddV2 as input #1(zero-based) was expected to be a "
            "bfloat16 tensor but is a float tensor",
            "tf_op_input_dtype_mismatch",
            "AddV2 got input #1 as float where it expected bfloat16",
        ),
        (
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: cannot compute MatMul as input "
            "#0(zero-based) was expected to be a half tensor but is a float tensor [Op:MatMul]",
            "tf_op_input_dtype_mismatch",
            "MatMul got input #0 as float where it expected half",
        ),
        (
            "block_q=1024 should be smaller or equal to q_seq_len=1",
            "kernel_block_larger_than_dimension",
            "block_q=1024 is larger than q_seq_len=1",
        ),
        (
            "ValueError: block_k_major=512 should be smaller or equal to kv_seq_len=256",
            "kernel_block_larger_than_dimension",
            "block_k_major=512 is larger than kv_seq_len=256",
        ),
    ],
)
def test_family_wordings_get_their_sub_rule(text: str, sub_rule: str, named: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "shape_dtype_error", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == f"shape_dtype_error/{sub_rule}"
    assert named in (crash.fix or "")


def test_the_dtype_fix_names_the_cast_and_the_mixed_precision_policy() -> None:
    crash = _diagnose(
        "cannot compute Mul as input #1(zero-based) was expected to be a bfloat16 tensor but is a float "
        "tensor"
    )
    assert "tf.cast" in crash.fix
    assert "mixed_bfloat16" in crash.fix


def test_the_block_fix_names_the_settings_that_feed_the_block_sizes() -> None:
    crash = _diagnose("block_b=16 should be smaller or equal to batch_size=8")
    assert crash.evidence.fix_rule == "shape_dtype_error/kernel_block_larger_than_dimension"
    assert "flash_attn_query_chunk_size" in crash.fix
    assert "BlockSizes" in crash.fix


def test_a_kernel_without_the_dtype_is_not_read_as_two_operand_dtypes() -> None:
    """A kernel registered without bfloat16 is another family: no operand has the wrong dtype."""
    crash = _diagnose(
        "InvalidArgumentError: Value for attr 'dtype' of bfloat16 is not in the list of allowed values: "
        "uint8, int32, int64, half, float, double"
    )
    assert crash.evidence.fix_rule != "shape_dtype_error/tf_op_input_dtype_mismatch"


def test_a_length_the_block_does_not_divide_keeps_the_divisibility_remedy() -> None:
    """A sequence that is not a multiple of the block is padded, not given a smaller block than itself."""
    crash = _diagnose("ValueError: kv_seq_len=4992 should be divisible by block_k_major=512")
    assert crash.evidence.fix_rule != "shape_dtype_error/kernel_block_larger_than_dimension"


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "jax._src.core.ShardingTypeError: dot_general requires lhs batch dimensions and rhs batch "
            "dimensions to have the same sharding, got (None, None) and ('data', 'tensor').",
            "shape_dtype_error",
            "operands_sharded_differently",
            "(None, None) and ('data', 'tensor')",
        ),
        (
            "jax._src.core.ShardingTypeError: dot_general requires contracting dimensions to have the same "
            "sharding, got ('model',) and (None,).",
            "shape_dtype_error",
            "operands_sharded_differently",
            "contracting dimensions of its operands",
        ),
        (
            "AttributeError: 'jaxlib.tpu_client_extension.PyTpuBuffer' object has no attribute 'dtype'",
            "version_mismatch",
            "jaxlib_object_missing_attribute",
            "reads .dtype from a jaxlib.tpu_client_extension.PyTpuBuffer",
        ),
        (
            # the old DeviceArray's buffer accessor has a sub-rule of its own (round diag144) naming its
            # replacement; the generic one above keeps other jaxlib objects' missing attributes
            "AttributeError: 'jaxlib.xla_extension.ArrayImpl' object has no attribute 'device_buffer'",
            "version_mismatch",
            "jax_array_devicearray_method_removed",
            ".device_buffer belonged to the old DeviceArray",
        ),
    ],
)
def test_sharding_and_release_wordings_get_their_sub_rule(
    text: str, category: str, sub_rule: str, named: str
) -> None:
    assert_fixed_by(text, category, sub_rule, named)


def test_the_sharding_fix_names_the_resharding_calls() -> None:
    crash = _diagnose(
        "ShardingTypeError: dot_general requires contracting dimensions to have the same sharding, got "
        "('x',) and ('y',)."
    )
    assert "jax.sharding.reshard" in crash.fix
    assert "with_sharding_constraint" in crash.fix


def test_contracting_dimensions_of_two_shapes_are_not_read_as_two_shardings() -> None:
    """Two sizes that disagree is a shape error; the resharding remedy is for two shardings."""
    crash = _diagnose(
        "TypeError: dot_general requires contracting dimensions to have the same shape, got (4,) and (8,)."
    )
    assert crash.evidence.fix_rule != "shape_dtype_error/operands_sharded_differently"


def test_a_module_without_the_attribute_is_not_read_as_a_jaxlib_object() -> None:
    """A module missing an API keeps the module remedy; the jaxlib sub-rule is for array and buffer types."""
    crash = _diagnose("AttributeError: module 'jax' has no attribute 'tree_multimap'")
    assert crash.evidence.fix_rule != "version_mismatch/jaxlib_object_missing_attribute"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "AssertionError: 'with_sharding_constraint' acts as an assert when all axes of\n"
            "mesh are of type 'explicit'. The array sharding: P('data', 'model') did not\n"
            "match the sharding provided: P('data', None). Please use 'jax.sharding.reshard'\n"
            "to shard your input to the sharding you want.",
            "the array is P('data', 'model'), the call asks for P('data', None)",
        ),
        (
            "AssertionError: `with_sharding_constraint` acts as an assert when all axes of mesh are of type "
            "`Explicit`. The array sharding: P(None, None) did not match the sharding provided: "
            "P(('data', 'model'), None).",
            "the call asks for P(('data', 'model'), None)",
        ),
    ],
)
def test_an_explicit_mesh_constraint_assert_gets_its_sub_rule(text: str, named: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "shape_dtype_error", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "shape_dtype_error/explicit_mesh_constraint_asserts"
    assert named in crash.fix
    assert "jax.sharding.reshard" in crash.fix
    assert "AxisType.Auto" in crash.fix


def test_a_manual_axis_in_a_constraint_is_not_read_as_an_explicit_mesh_assert() -> None:
    """A constraint naming a shard_map's manual axes is refused for another reason."""
    crash = _diagnose(
        "ValueError: pspec PartitionSpec(('data', 'fsdp', 'tensor'), None) contains a manual axes "
        "('data', 'fsdp', 'tensor') of mesh which is not allowed. If you are using a "
        "with_sharding_constraint under a shard_map, only use the mesh axis in PartitionSpec which are not "
        "manual."
    )
    assert crash.evidence.fix_rule != "shape_dtype_error/explicit_mesh_constraint_asserts"
