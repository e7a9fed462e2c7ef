"""Round diag126's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: two image tensors whose spatial sizes differ, a reshape to (n, -1, ...) whose leading
size does not divide, and TensorFlow's graph-builder dtype check (`crash_fix_packs/shape_dtype_error.yaml`,
`crash_cues/framework_vocabularies.yaml`; docs/diagnose-accuracy.md, "Round diag126")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed

SHAPE = "shape_dtype_error"
SPATIAL = "from_facts_spatial_sizes_stride"
RESHAPE = "from_facts_reshape_leading_multiple"
TF_GRAPH = "from_facts_tf_graph_input_dtype"


def jax_trace(message: str) -> str:
    """A traceback from an invented jitted step whose last frame is jax's own shape check."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/srv/job/sample.py", line 51, in <module>',
        "    out = step(params, batch)",
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/lax/lax.py", line 2301, in '
        "broadcasting_shape_rule",
        "    raise TypeError(msg)",
        message,
    ]
    return "\n".join(frames) + "\n"


def tf_trace(message: str) -> str:
    """A graph-mode TensorFlow traceback ending in the op builder's input check (an invented model)."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/srv/job/model.py", line 140, in body',
        "    h = x * scale",
        '  File "/opt/venv/lib/python3.12/site-packages/tensorflow/python/framework/op_def_library.py", '
        "line 546, in _apply_op_helper",
        "    inferred_from[input_arg.type_attr]))",
        message,
    ]
    return "\n".join(frames) + "\n"


SPATIAL_PAIRS = (
    # channels first (a latent-diffusion latent against noise), channels last (a UNet skip connection)
    (
        "TypeError: add got incompatible shapes for broadcasting: (2, 4, 96, 96), (2, 4, 100, 100).",
        "(2, 4, 96, 96)",
    ),
    (
        "TypeError: concatenate got incompatible shapes: (8, 31, 31, 320) and (8, 32, 32, 320)",
        "(8, 31, 31, 320)",
    ),
)


def test_two_image_tensors_of_other_spatial_sizes_are_told_to_resize_to_the_stride() -> None:
    for message, shape in SPATIAL_PAIRS:
        text = jax_trace(message)
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (SHAPE, f"{SHAPE}/{SPATIAL}"), text
        assert shape in fix and "multiple" in fix, fix
        assert_fixed_by(text, SHAPE, SPATIAL, "Resize")


def test_pairs_that_differ_elsewhere_are_not_claimed_as_spatial() -> None:
    for message in (
        # the batch differs (a partial last batch), spatial sizes agree
        "TypeError: mul got incompatible shapes for broadcasting: (4, 4, 64, 64), (3, 4, 64, 64).",
        # the channels differ
        "TypeError: add got incompatible shapes for broadcasting: (1, 4, 64, 64), (1, 8, 64, 64).",
        # one spatial size only
        "TypeError: add got incompatible shapes for broadcasting: (1, 4, 64, 64), (1, 4, 64, 65).",
        # attention heads and head size of a (batch, heads, length, head_dim) pair
        "TypeError: dot_general got incompatible shapes: (2, 12, 128, 64) and (2, 12, 128, 80)",
    ):
        assert_not_claimed(jax_trace(message), SPATIAL)


def test_a_reshape_whose_leading_size_does_not_divide_is_told_to_pad_to_the_device_count() -> None:
    for message, rows, lead in (
        (
            "jax.core.InconclusiveDimensionOperation: Cannot divide evenly the sizes of shapes (1001, 77) "
            "and (8, -1, 77). The remainder 77 should be 0.",
            "1001",
            "8",
        ),
        (
            "InconclusiveDimensionOperation: Cannot divide evenly the sizes of shapes (30,) and (4, -1)",
            "30",
            "4",
        ),
    ):
        text = jax_trace(message)
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (SHAPE, f"{SHAPE}/{RESHAPE}"), text
        assert f"{rows} leading rows into {lead} equal groups" in fix, fix
        assert_fixed_by(text, SHAPE, RESHAPE, "jax.local_device_count()")


def test_reshapes_without_an_inferred_second_dimension_are_not_claimed() -> None:
    for message in (
        # no -1 after the leading size: a plain size mismatch, not a split into groups
        "InconclusiveDimensionOperation: Cannot divide evenly the sizes of shapes (12, 5) and (7, 9)",
        # the inferred dimension leads
        "InconclusiveDimensionOperation: Cannot divide evenly the sizes of shapes (10, 3) and (-1, 4)",
    ):
        assert_not_claimed(jax_trace(message), RESHAPE)


def test_a_graph_op_input_of_another_dtype_is_told_to_cast() -> None:
    for message, named in (
        (
            "TypeError: Input 'y' of 'AddV2' Op has type float32 that does not match type bfloat16 of "
            "argument 'x'.",
            "tf.cast(y, x.dtype)",
        ),
        (
            "TypeError: Input 'b' of 'MatMul' Op has type float16 that does not match type float32 of "
            "argument 'a'.",
            "tf.cast(b, a.dtype)",
        ),
    ):
        text = tf_trace(message)
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (SHAPE, f"{SHAPE}/{TF_GRAPH}"), text
        assert named in fix and "activation_dtype" in fix, fix
        assert_fixed_by(text, SHAPE, TF_GRAPH, named)


def test_other_tensorflow_dtype_wordings_are_not_claimed_by_the_graph_rule() -> None:
    for message in (
        # an op whose input has one fixed type: no argument to match, so no cast to the other side
        "TypeError: Input 'acts' of 'WarpRNNT' Op has type float16 that does not match expected type of "
        "float32.",
        # the eager wording keeps its own sub-rule
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: cannot compute AddV2 as input "
        "#1(zero-based) was expected to be a bfloat16 tensor but is a float tensor [Op:AddV2]",
    ):
        assert_not_claimed(tf_trace(message), TF_GRAPH)
