"""A correct kernel whose grid is sized at run time: it scales the first `count` row blocks of x (a
traced scalar, so the number of grid steps is unknown when the kernel is traced or compiled) and copies
the rest through the aliased output. Its roofline must say the grid is sized at run time, never
"0 grid steps"."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]
TARGET_SHAPE: dict[str, int] = {"blocks": 64}
ROWS = 8


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = rng.standard_normal((shape["blocks"] * ROWS, 128), np.float32)
    count = np.array(rng.integers(1, shape["blocks"] + 1), np.int32)
    return jnp.asarray(x, dtype), jnp.asarray(count)


def _body(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = 3.0 * x_ref[...]


def kernel(x: jax.Array, count: jax.Array) -> jax.Array:
    return pl.pallas_call(
        _body,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(count,),
        in_specs=[pl.BlockSpec((ROWS, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((ROWS, 128), lambda i: (i, 0)),
        input_output_aliases={0: 0},
    )(x)


def reference(x: jax.Array, count: jax.Array) -> jax.Array:
    rows = jnp.arange(x.shape[0])[:, None] < count * ROWS
    return jnp.where(rows, 3.0 * x, x)
