"""int8 quantized matmul: out = (x_q @ w_q) * x_scale * w_scale, accumulated exactly in int32.

x_q is int8 with one float32 scale per row (x_scale, shape (m, 1)); w_q is int8 with one float32 scale per
column (w_scale, shape (1, n)). The MXU multiplies int8 blocks into an int32 VMEM accumulator, which is
exact, so the only rounding is the final float32 scaling on the last contraction step. Block sizes are
upper bounds, shrunk to divide each dimension.
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
    "block_k": [256, 512, 1024],
}
DEFAULTS: dict[str, Any] = {"block_m": 128, "block_n": 128, "block_k": 256}
SHAPES: list[dict[str, int]] = [{"m": 128, "k": 512, "n": 256}, {"m": 256, "k": 256, "n": 128}]
DTYPES: list[str] = ["int8"]
TARGET_SHAPE: dict[str, int] = {"m": 4096, "k": 4096, "n": 4096}


def _quantize(values: np.ndarray, axis: int) -> tuple[jax.Array, jax.Array]:
    """Symmetric int8 quantization with one scale per slice along `axis`."""
    scale = np.max(np.abs(values), axis=axis, keepdims=True) / 127.0
    quantized = np.clip(np.round(values / scale), -127, 127).astype(np.int8)
    return jnp.asarray(quantized), jnp.asarray(scale, jnp.float32)


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    del dtype  # the operands are always int8; the scales float32
    x_q, x_scale = _quantize(rng.standard_normal((shape["m"], shape["k"]), np.float32), axis=1)
    w_q, w_scale = _quantize(rng.standard_normal((shape["k"], shape["n"]), np.float32), axis=0)
    return x_q, w_q, x_scale, w_scale


def _block(size: int, dim: int) -> int:
    """The block size used: `size` is an upper bound, shrunk to divide `dim` so blocks tile it."""
    return math.gcd(min(size, dim), dim)


def _int8_kernel(x_ref: Any, w_ref: Any, xs_ref: Any, ws_ref: Any, o_ref: Any, acc_ref: Any) -> None:
    step = pl.program_id(2)

    @pl.when(step == 0)
    def _zero() -> None:
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.int32)

    acc_ref[...] += jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.int32)

    @pl.when(step == pl.num_programs(2) - 1)
    def _store() -> None:
        o_ref[...] = acc_ref[...].astype(jnp.float32) * xs_ref[...] * ws_ref[...]


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k"))
def kernel(
    x_q: jax.Array,
    w_q: jax.Array,
    x_scale: jax.Array,
    w_scale: jax.Array,
    *,
    block_m: int = 128,
    block_n: int = 128,
    block_k: int = 256,
) -> jax.Array:
    m, k = x_q.shape
    _, n = w_q.shape
    bm, bn, bk = _block(block_m, m), _block(block_n, n), _block(block_k, k)
    return pl.pallas_call(
        _int8_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
            pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j)),
            pl.BlockSpec((bm, 1), lambda i, j, kk: (i, 0)),
            pl.BlockSpec((1, bn), lambda i, j, kk: (0, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.int32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        cost_estimate=pl.CostEstimate(
            flops=2 * m * n * k, transcendentals=0, bytes_accessed=m * k + k * n + 4 * (m + n + m * n)
        ),
    )(x_q, w_q, x_scale, w_scale)


def reference(x_q: jax.Array, w_q: jax.Array, x_scale: jax.Array, w_scale: jax.Array) -> jax.Array:
    product = jnp.dot(x_q.astype(jnp.int32), w_q.astype(jnp.int32))
    return product.astype(x_scale.dtype) * x_scale * w_scale
