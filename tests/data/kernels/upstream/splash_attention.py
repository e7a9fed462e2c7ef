"""Adapter: jax's shipped splash attention forward
(`jax.experimental.pallas.ops.tpu.splash_attention`, `make_splash_mha_single_device` with a causal mask).

Splash attention skips the kv blocks its mask rules out (above the causal diagonal), so the work its grid
does is less than dense attention's. It takes (heads, seq, head_dim) per example and does not scale q.
Upstream's tests (jax tests/pallas/tpu_splash_attention_kernel_test.py) compare it with a masked softmax
attention: expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from _adapter_inputs import normal_arrays
from jax.experimental.pallas.ops.tpu import splash_attention as upstream

SPACE: dict[str, list[Any]] = {"block_q": [128, 256], "block_kv": [128, 256]}
DEFAULTS: dict[str, Any] = {"block_q": 128, "block_kv": 128}
SHAPES: list[dict[str, int]] = [{"heads": 2, "seq": 256, "head_dim": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"heads": 8, "seq": 2048, "head_dim": 128}


make_inputs = normal_arrays(3, "heads", "seq", "head_dim")


def kernel(q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int = 128, block_kv: int = 128) -> jax.Array:
    heads, seq, _ = q.shape
    mask = upstream.MultiHeadMask([upstream.CausalMask((seq, seq)) for _ in range(heads)])
    bq, bkv = min(block_q, seq), min(block_kv, seq)
    sizes = upstream.BlockSizes(block_q=bq, block_kv=bkv, block_kv_compute=bkv)
    return upstream.make_splash_mha_single_device(mask, block_sizes=sizes)(q, k, v)


def reference(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    logits = jnp.einsum("hqd,hkd->hqk", q, k, precision=jax.lax.Precision.HIGHEST)
    seq = q.shape[1]
    causal = jnp.arange(seq)[:, None] >= jnp.arange(seq)[None, :]
    weights = jax.nn.softmax(jnp.where(causal, logits, -jnp.inf), axis=-1)
    return jnp.einsum("hqk,hkd->hqd", weights, v, precision=jax.lax.Precision.HIGHEST)
