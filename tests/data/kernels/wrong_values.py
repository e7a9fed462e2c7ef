"""Planted bug: the kernel adds its bias to every block but the last (an off-by-one in the block guard),
so a quarter of the output is off by the bias. Every element is written; the numbers are wrong."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = rng.standard_normal((8 * shape["blocks"], 128), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(rng.standard_normal((1, 128), np.float32) + 3.0, dtype)


def _body(x_ref: Any, b_ref: Any, o_ref: Any) -> None:
    last = pl.num_programs(0) - 1
    bias = jnp.where(pl.program_id(0) < last, b_ref[...], 0.0)
    o_ref[...] = x_ref[...] + bias


def kernel(x: jax.Array, bias: jax.Array) -> jax.Array:
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    bias_spec = pl.BlockSpec((1, 128), lambda i: (0, 0))
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(
        _body, out_shape=out_shape, grid=(x.shape[0] // 8,), in_specs=[spec, bias_spec], out_specs=spec
    )(x, bias)


def reference(x: jax.Array, bias: jax.Array) -> jax.Array:
    return x + bias
