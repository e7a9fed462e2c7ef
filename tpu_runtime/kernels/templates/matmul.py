"""Tiled float32 matmul: out = x @ y, accumulated in the resident float32 output block.

The grid walks (row block, column block, contraction block); the output block index does not change along
the contraction axis, so the block stays in VMEM across it and is written back to HBM once, when the row or
column block changes. The kernel zeroes it on the first contraction step and adds one partial product per
step. Block sizes are upper bounds, shrunk to divide each dimension.
"""

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {
    "block_m": [128, 256, 512],
    "block_n": [128, 256, 512],
    "block_k": [128, 256, 512],
}
DEFAULTS: dict[str, Any] = {"block_m": 128, "block_n": 128, "block_k": 128}
SHAPES: list[dict[str, int]] = [{"m": 128, "k": 256, "n": 128}, {"m": 256, "k": 128, "n": 384}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"m": 2048, "k": 2048, "n": 2048}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = rng.standard_normal((shape["m"], shape["k"]), np.float32)
    y = rng.standard_normal((shape["k"], shape["n"]), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def _block(size: int, dim: int) -> int:
    """The block size used: `size` is an upper bound, shrunk to divide `dim` so blocks tile it."""
    return math.gcd(min(size, dim), dim)


def _matmul_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    @pl.when(pl.program_id(2) == 0)
    def _zero() -> None:
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k"))
def kernel(
    x: jax.Array, y: jax.Array, *, block_m: int = 128, block_n: int = 128, block_k: int = 128
) -> jax.Array:
    m, k = x.shape
    _, n = y.shape
    bm, bn, bk = _block(block_m, m), _block(block_n, n), _block(block_k, k)
    return pl.pallas_call(
        _matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        cost_estimate=pl.CostEstimate(
            flops=2 * m * n * k, transcendentals=0, bytes_accessed=4 * (m * k + k * n + m * n)
        ),
    )(x, y)


def reference(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.dot(x, y, preferred_element_type=x.dtype)
