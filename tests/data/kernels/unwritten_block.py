"""Planted bug: the last row block of the output is never written (an off-by-one in a guard)."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 32, "cols": 128}]
DTYPES: list[str] = ["float32"]


def _double(x_ref: Any, o_ref: Any) -> None:
    @pl.when(pl.program_id(0) < pl.num_programs(0) - 1)
    def _store() -> None:
        o_ref[...] = 2.0 * x_ref[...]


def kernel(x: jax.Array) -> jax.Array:
    spec = pl.BlockSpec((8, x.shape[1]), lambda i: (i, 0))
    return pl.pallas_call(
        _double,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // 8,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return 2.0 * x
