"""Flash attention forward: out = softmax(q @ k.T * scale) @ v, without materializing the score matrix.

Grid: (batch*heads, query block, key/value block). For one query block the kernel walks the key/value
blocks keeping, per query row, the running maximum `m`, the running softmax denominator `l` and the
unnormalized output `acc` in float32 VMEM scratch (online softmax). When a new block raises the maximum,
the old `l` and `acc` are rescaled by exp(m_old - m_new). The last key/value step divides by `l` and writes
the output block. Not causal; q, k, v are (batch*heads, seq, head_dim).
"""

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {"block_q": [128, 256, 512], "block_kv": [128, 256, 512, 1024]}
DEFAULTS: dict[str, Any] = {"block_q": 128, "block_kv": 128}
SHAPES: list[dict[str, int]] = [
    {"batch_heads": 1, "seq_q": 128, "seq_kv": 256, "head_dim": 128},
    {"batch_heads": 2, "seq_q": 256, "seq_kv": 384, "head_dim": 128},
]
DTYPES: list[str] = ["bfloat16"]
TARGET_SHAPE: dict[str, int] = {"batch_heads": 32, "seq_q": 4096, "seq_kv": 4096, "head_dim": 128}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    bh, d = shape["batch_heads"], shape["head_dim"]
    q = rng.standard_normal((bh, shape["seq_q"], d), np.float32)
    k = rng.standard_normal((bh, shape["seq_kv"], d), np.float32)
    v = rng.standard_normal((bh, shape["seq_kv"], d), np.float32)
    return jnp.asarray(q, dtype), jnp.asarray(k, dtype), jnp.asarray(v, dtype)


def _block(size: int, dim: int) -> int:
    """The block size used: `size` is an upper bound, shrunk to divide `dim` so blocks tile it."""
    return math.gcd(min(size, dim), dim)


def _flash_kernel(
    q_ref: Any, k_ref: Any, v_ref: Any, o_ref: Any, m_ref: Any, l_ref: Any, acc_ref: Any, *, scale: float
) -> None:
    kv_step = pl.program_id(2)

    @pl.when(kv_step == 0)
    def _init() -> None:
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    scores = jax.lax.dot_general(
        q_ref[...], k_ref[...], (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32
    )
    scores = scores * scale
    m_prev = m_ref[...]
    m_new = jnp.maximum(m_prev, jnp.max(scores, axis=-1, keepdims=True))
    alpha = jnp.exp(m_prev - m_new)
    p = jnp.exp(scores - m_new)
    l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)
    acc_ref[...] = alpha * acc_ref[...] + jnp.dot(
        p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32
    )
    m_ref[...] = m_new

    @pl.when(kv_step == pl.num_programs(2) - 1)
    def _store() -> None:
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_q", "block_kv"))
def kernel(q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int = 128, block_kv: int = 128) -> jax.Array:
    bh, seq_q, d = q.shape
    seq_kv = k.shape[1]
    bq, bkv = _block(block_q, seq_q), _block(block_kv, seq_kv)
    body = _flash_kernel_with_scale(1.0 / math.sqrt(d))
    itemsize = jnp.dtype(q.dtype).itemsize
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(bh, seq_q // bq, seq_kv // bkv),
        in_specs=[
            pl.BlockSpec((None, bq, d), lambda b, i, j: (b, i, 0)),
            pl.BlockSpec((None, bkv, d), lambda b, i, j: (b, j, 0)),
            pl.BlockSpec((None, bkv, d), lambda b, i, j: (b, j, 0)),
        ],
        out_specs=pl.BlockSpec((None, bq, d), lambda b, i, j: (b, i, 0)),
        scratch_shapes=[
            pltpu.VMEM((bq, 1), jnp.float32),
            pltpu.VMEM((bq, 1), jnp.float32),
            pltpu.VMEM((bq, d), jnp.float32),
        ],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        cost_estimate=pl.CostEstimate(
            flops=4 * bh * seq_q * seq_kv * d,
            transcendentals=bh * seq_q * seq_kv,
            bytes_accessed=itemsize * bh * d * (2 * seq_q + 2 * seq_kv),
        ),
    )(q, k, v)


def _flash_kernel_with_scale(scale: float) -> Any:
    def body(*refs: Any) -> None:
        _flash_kernel(*refs, scale=scale)

    return body


def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    dtype = jnp.promote_types(q.dtype, jnp.float32)
    scores = jnp.einsum("bqd,bkd->bqk", q.astype(dtype), k.astype(dtype)) / math.sqrt(q.shape[-1])
    out = jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(scores, axis=-1), v.astype(dtype))
    return out.astype(q.dtype)
