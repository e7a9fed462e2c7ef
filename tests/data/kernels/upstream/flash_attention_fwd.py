"""Adapter: jax's shipped flash attention forward (`jax.experimental.pallas.ops.tpu.flash_attention`).

Causal, with explicit block sizes so the grid has several steps per axis. jax 0.10.2's tests/pallas has no
test of this kernel; the module ships its own plain softmax reference (`mha_reference`) for it to match,
the same computation as the reference here: expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from _adapter_inputs import normal_arrays
from jax.experimental.pallas.ops.tpu import flash_attention as upstream

SPACE: dict[str, list[Any]] = {"block_q": [128, 256], "block_k": [128, 256]}
DEFAULTS: dict[str, Any] = {"block_q": 128, "block_k": 128}
SHAPES: list[dict[str, int]] = [{"batch": 1, "heads": 1, "seq": 256, "head_dim": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"batch": 2, "heads": 8, "seq": 2048, "head_dim": 128}
SCALE = 0.125


make_inputs = normal_arrays(3, "batch", "heads", "seq", "head_dim")


def kernel(q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int = 128, block_k: int = 128) -> jax.Array:
    seq = q.shape[2]
    bq, bk = min(block_q, seq), min(block_k, seq)
    sizes = upstream.BlockSizes(
        block_q=bq, block_k_major=bk, block_k=bk, block_b=1,
        block_q_major_dkv=bq, block_k_major_dkv=bk, block_k_dkv=bk, block_q_dkv=bq,
        block_k_major_dq=bk, block_k_dq=bk, block_q_dq=bq,
    )  # fmt: skip
    return upstream.flash_attention(q, k, v, causal=True, sm_scale=SCALE, block_sizes=sizes)


def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    logits = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=jax.lax.Precision.HIGHEST) * SCALE
    seq = q.shape[2]
    causal = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
    logits = jnp.where(causal, logits, -jnp.inf)
    weights = jax.nn.softmax(logits, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", weights, v, precision=jax.lax.Precision.HIGHEST)
