"""Tiled bfloat16 matmul with a float32 VMEM accumulator: out = (x @ y) rounded to bfloat16 once.

The MXU multiplies bfloat16 blocks and accumulates in float32. The running sum lives in a float32 VMEM
scratch buffer that persists across the contraction axis; it is zeroed on the first contraction step and
cast to bfloat16 into the output block on the last, so the output is rounded once, not once per step.
Block sizes are upper bounds, shrunk to divide each dimension.
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
    "block_k": [128, 256, 512, 1024],
}
DEFAULTS: dict[str, Any] = {"block_m": 128, "block_n": 128, "block_k": 128}
SHAPES: list[dict[str, int]] = [{"m": 128, "k": 256, "n": 128}, {"m": 256, "k": 128, "n": 384}]
DTYPES: list[str] = ["bfloat16"]
TARGET_SHAPE: dict[str, int] = {"m": 4096, "k": 4096, "n": 4096}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = rng.standard_normal((shape["m"], shape["k"]), np.float32)
    y = rng.standard_normal((shape["k"], shape["n"]), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def _block(size: int, dim: int) -> int:
    """The block size used: `size` is an upper bound, shrunk to divide `dim` so blocks tile it."""
    return math.gcd(min(size, dim), dim)


def _matmul_kernel(x_ref: Any, y_ref: Any, o_ref: Any, acc_ref: Any) -> None:
    step = pl.program_id(2)

    @pl.when(step == 0)
    def _zero() -> None:
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(step == pl.num_programs(2) - 1)
    def _store() -> None:
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k"))
def kernel(
    x: jax.Array, y: jax.Array, *, block_m: int = 128, block_n: int = 128, block_k: int = 128
) -> jax.Array:
    m, k = x.shape
    _, n = y.shape
    bm, bn, bk = _block(block_m, m), _block(block_n, n), _block(block_k, k)
    itemsize = jnp.dtype(x.dtype).itemsize
    return pl.pallas_call(
        _matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        cost_estimate=pl.CostEstimate(
            flops=2 * m * n * k, transcendentals=0, bytes_accessed=itemsize * (m * k + k * n + m * n)
        ),
    )(x, y)


def reference(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.dot(x, y)
