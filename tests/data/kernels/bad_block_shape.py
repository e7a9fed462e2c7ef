"""Planted bug: a block shape Mosaic cannot tile. Rows come in blocks of 12, which is not a multiple of 8
(and not the whole array), so interpret mode computes the right answer but lowering for TPU fails."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {"block_rows": [12, 24]}
DEFAULTS: dict[str, Any] = {"block_rows": 12}
SHAPES: list[dict[str, int]] = [{"rows": 24, "cols": 128}]
DTYPES: list[str] = ["float32"]


def _negate(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = -x_ref[...]


def kernel(x: jax.Array, *, block_rows: int = 12) -> jax.Array:
    spec = pl.BlockSpec((block_rows, x.shape[1]), lambda i: (i, 0))
    return pl.pallas_call(
        _negate,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // block_rows,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return -x
