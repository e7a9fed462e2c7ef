"""Planted bug: the last row block of the output is never written (an off-by-one in a guard)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 32, "cols": 128}]
DTYPES: list[str] = ["float32"]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    return (jnp.asarray(rng.standard_normal((shape["rows"], shape["cols"]), np.float32), dtype),)


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
