"""A small correct kernel (out = a * x + y, row blocks) for fast tests of check, tune and the CLI."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {"block_rows": [8, 16, 32, 64]}
DEFAULTS: dict[str, Any] = {"block_rows": 8}
SHAPES: list[dict[str, int]] = [{"rows": 16, "cols": 128}, {"rows": 32, "cols": 256}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"rows": 4096, "cols": 1024}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    dims = (shape["rows"], shape["cols"])
    x = rng.standard_normal(dims, np.float32)
    y = rng.standard_normal(dims, np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def _axpy(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = 2.0 * x_ref[...] + y_ref[...]


def kernel(x: jax.Array, y: jax.Array, *, block_rows: int = 8) -> jax.Array:
    rows, cols = x.shape
    block = min(block_rows, rows)
    spec = pl.BlockSpec((block, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _axpy,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // block,),
        in_specs=[spec, spec],
        out_specs=spec,
    )(x, y)


def reference(x: jax.Array, y: jax.Array) -> jax.Array:
    return 2.0 * x + y
