"""Adapter: the backward pass of jax's shipped splash attention
(`jax.experimental.pallas.ops.tpu.splash_attention`, its dq and dkv Pallas kernels through the custom VJP),
causal, one example of (heads, seq, head_dim).

kernel() returns the gradients of sum(splash(q, k, v) * cotangent) with respect to q, k and v. Upstream's
tests compare these with the gradients of a masked softmax attention: expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from _adapter_inputs import normal_arrays
from jax.experimental.pallas.ops.tpu import splash_attention as upstream

SPACE: dict[str, list[Any]] = {"block": [128, 256]}
DEFAULTS: dict[str, Any] = {"block": 128}
SHAPES: list[dict[str, int]] = [{"heads": 2, "seq": 256, "head_dim": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"heads": 8, "seq": 2048, "head_dim": 128}


make_inputs = normal_arrays(4, "heads", "seq", "head_dim")


def kernel(q: jax.Array, k: jax.Array, v: jax.Array, cotangent: jax.Array, *, block: int = 128) -> jax.Array:
    heads, seq, _ = q.shape
    mask = upstream.MultiHeadMask([upstream.CausalMask((seq, seq)) for _ in range(heads)])
    b = min(block, seq)
    sizes = upstream.BlockSizes(
        block_q=b, block_kv=b, block_kv_compute=b, block_q_dkv=b, block_kv_dkv=b,
        block_kv_dkv_compute=b, block_q_dq=b, block_kv_dq=b,
    )  # fmt: skip
    splash = upstream.make_splash_mha_single_device(mask, block_sizes=sizes)

    def loss(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        return jnp.sum(splash(q, k, v) * cotangent)

    return jnp.stack(jax.grad(loss, argnums=(0, 1, 2))(q, k, v))


def reference(q: jax.Array, k: jax.Array, v: jax.Array, cotangent: jax.Array) -> jax.Array:
    def loss(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        logits = jnp.einsum("hqd,hkd->hqk", q, k, precision=jax.lax.Precision.HIGHEST)
        seq = q.shape[1]
        causal = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
        weights = jax.nn.softmax(jnp.where(causal, logits, -jnp.inf), axis=-1)
        out = jnp.einsum("hqk,hkd->hqd", weights, v, precision=jax.lax.Precision.HIGHEST)
        return jnp.sum(out * cotangent)

    return jnp.stack(jax.grad(loss, argnums=(0, 1, 2))(q, k, v))
