"""Adapter: the backward pass of jax's shipped flash attention
(`jax.experimental.pallas.ops.tpu.flash_attention`, its dkv and dq Pallas kernels through the custom VJP).

kernel() returns the gradients of sum(flash_attention(q, k, v) * cotangent) with respect to q, k and v.
jax 0.10.2's tests/pallas has no test of this kernel; the module ships a plain reference with its own
backward pass (`mha_reference`, `mha_reference_bwd`) for these to match: expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from _adapter_inputs import normal_arrays
from jax.experimental.pallas.ops.tpu import flash_attention as upstream

SPACE: dict[str, list[Any]] = {"block": [128, 256]}
DEFAULTS: dict[str, Any] = {"block": 128}
SHAPES: list[dict[str, int]] = [{"batch": 1, "heads": 1, "seq": 256, "head_dim": 128}]
TARGET_SHAPE: dict[str, int] = {"batch": 2, "heads": 8, "seq": 2048, "head_dim": 128}
SCALE = 0.125


make_inputs = normal_arrays(4, "batch", "heads", "seq", "head_dim")


def kernel(q: jax.Array, k: jax.Array, v: jax.Array, cotangent: jax.Array, *, block: int = 128) -> jax.Array:
    b = min(block, q.shape[2])
    sizes = upstream.BlockSizes(
        block_q=b, block_k_major=b, block_k=b, block_b=1,
        block_q_major_dkv=b, block_k_major_dkv=b, block_k_dkv=b, block_q_dkv=b,
        block_k_major_dq=b, block_k_dq=b, block_q_dq=b,
    )  # fmt: skip

    def loss(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        out = upstream.flash_attention(q, k, v, causal=True, sm_scale=SCALE, block_sizes=sizes)
        return jnp.sum(out * cotangent)

    return jnp.stack(jax.grad(loss, argnums=(0, 1, 2))(q, k, v))


def reference(q: jax.Array, k: jax.Array, v: jax.Array, cotangent: jax.Array) -> jax.Array:
    def loss(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        logits = jnp.einsum("bhqd,bhkd->bhqk", q, k, precision=jax.lax.Precision.HIGHEST) * SCALE
        seq = q.shape[2]
        logits = jnp.where(jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :], logits, -jnp.inf)
        out = jnp.einsum(
            "bhqk,bhkd->bhqd", jax.nn.softmax(logits, -1), v, precision=jax.lax.Precision.HIGHEST
        )
        return jnp.sum(out * cotangent)

    return jnp.stack(jax.grad(loss, argnums=(0, 1, 2))(q, k, v))
