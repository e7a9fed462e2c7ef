"""RMSNorm over the last axis: out = x / sqrt(mean(x**2) + eps) * weight, computed in float32.

Each grid step normalizes `block_rows` full rows (the hidden axis is one block, so the mean needs no
cross-step reduction) and casts back to the input dtype. `weight` is passed as a (1, hidden) row so its
block is legal on TPU and stays resident across the grid.
"""

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

EPS = 1e-6

SPACE: dict[str, list[Any]] = {"block_rows": [8, 16, 32, 64, 128, 256, 512]}
DEFAULTS: dict[str, Any] = {"block_rows": 32}
SHAPES: list[dict[str, int]] = [{"rows": 64, "hidden": 256}, {"rows": 96, "hidden": 384}]
DTYPES: list[str] = ["float32", "bfloat16"]
TARGET_SHAPE: dict[str, int] = {"rows": 8192, "hidden": 4096}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = 2.0 * rng.standard_normal((shape["rows"], shape["hidden"]), np.float32)
    weight = 1.0 + 0.1 * rng.standard_normal((shape["hidden"],), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(weight, dtype)


def _rmsnorm_kernel(x_ref: Any, w_ref: Any, o_ref: Any) -> None:
    x = x_ref[...].astype(jnp.float32)
    inv = jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + EPS)
    o_ref[...] = (x * inv * w_ref[...].astype(jnp.float32)).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_rows",))
def kernel(x: jax.Array, weight: jax.Array, *, block_rows: int = 32) -> jax.Array:
    rows, hidden = x.shape
    block = math.gcd(min(block_rows, rows), rows)  # an upper bound, shrunk to divide the row count
    itemsize = jnp.dtype(x.dtype).itemsize
    return pl.pallas_call(
        _rmsnorm_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // block,),
        in_specs=[
            pl.BlockSpec((block, hidden), lambda i: (i, 0)),
            pl.BlockSpec((1, hidden), lambda i: (0, 0)),
        ],
        out_specs=pl.BlockSpec((block, hidden), lambda i: (i, 0)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
        cost_estimate=pl.CostEstimate(
            flops=4 * rows * hidden,
            transcendentals=rows,
            bytes_accessed=itemsize * (2 * rows * hidden + hidden),
        ),
    )(x, weight.reshape(1, hidden))


def reference(x: jax.Array, weight: jax.Array) -> jax.Array:
    xf = x.astype(jnp.promote_types(x.dtype, jnp.float32))
    inv = jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + EPS)
    return (xf * inv * weight.astype(xf.dtype)).astype(x.dtype)
