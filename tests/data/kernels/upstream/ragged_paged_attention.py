"""Adapter: jax's shipped ragged paged attention
(`jax.experimental.pallas.ops.tpu.ragged_paged_attention.ragged_paged_attention`).

Mixed prefill and decode: sequence i has `cu_q_lens[i+1] - cu_q_lens[i]` query tokens (causal over the last
positions of its `kv_lens[i]` cached tokens). K and V pages are interleaved along the head axis (K of head h
at 2h, V at 2h+1). The reference loops over sequences in Python with their concrete sizes. Upstream's tests
run it on a TPU against such a per-sequence loop. JAX's TPU interpreter cannot run it (it reads a DMA'd
buffer through a reshaped ref, which the interpreter does not implement), so the expected verdict is
"cannot check in interpret mode", with lowering and compile passing.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas.ops.tpu.ragged_paged_attention import ragged_paged_attention as upstream

SPACE: dict[str, list[Any]] = {"kv_pages_per_block": [1, 2], "queries_per_block": [8, 16]}
DEFAULTS: dict[str, Any] = {"kv_pages_per_block": 2, "queries_per_block": 8}
SHAPES: list[dict[str, int]] = [
    {"seqs": 3, "tokens": 16, "q_heads": 4, "kv_heads": 1, "pages": 4, "page_size": 16, "head_dim": 128}
]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {
    "seqs": 16, "tokens": 512, "q_heads": 32, "kv_heads": 8, "pages": 32, "page_size": 16, "head_dim": 128
}  # fmt: skip
SCALE = 0.125


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    seqs, tokens, pages, page_size = shape["seqs"], shape["tokens"], shape["pages"], shape["page_size"]
    cuts = np.sort(rng.choice(np.arange(1, tokens), size=seqs - 1, replace=False))
    cu_q_lens = np.concatenate([[0], cuts, [tokens]]).astype(np.int32)
    q_lens = np.diff(cu_q_lens)
    capacity = pages * page_size
    kv_lens = np.minimum(q_lens + rng.integers(0, capacity, size=seqs), capacity).astype(np.int32)
    kv_lens = np.maximum(kv_lens, q_lens).astype(np.int32)
    total = seqs * pages
    table = rng.permutation(total).reshape(seqs, pages).astype(np.int32)
    q = rng.standard_normal((tokens, shape["q_heads"], shape["head_dim"]), np.float32)
    kv = rng.standard_normal((total, page_size, 2 * shape["kv_heads"], shape["head_dim"]), np.float32)
    return (
        jnp.asarray(q, dtype),
        jnp.asarray(kv, dtype),
        jnp.asarray(kv_lens),
        jnp.asarray(table),
        jnp.asarray(cu_q_lens),
        jnp.asarray([seqs], jnp.int32),
    )


def kernel(
    q: jax.Array,
    kv_pages: jax.Array,
    kv_lens: jax.Array,
    page_indices: jax.Array,
    cu_q_lens: jax.Array,
    num_seqs: jax.Array,
    *,
    kv_pages_per_block: int = 2,
    queries_per_block: int = 8,
) -> jax.Array:
    return upstream(
        q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, sm_scale=SCALE,
        num_kv_pages_per_block=kv_pages_per_block, num_queries_per_block=queries_per_block,
    )  # fmt: skip


def reference(
    q: jax.Array,
    kv_pages: jax.Array,
    kv_lens: jax.Array,
    page_indices: jax.Array,
    cu_q_lens: jax.Array,
    num_seqs: jax.Array,
) -> jax.Array:
    combined, head_dim = kv_pages.shape[2:]
    kv_heads = combined // 2
    group = q.shape[1] // kv_heads
    outputs = []
    for i in range(int(num_seqs[0])):
        start, end = int(cu_q_lens[i]), int(cu_q_lens[i + 1])
        kv_len = int(kv_lens[i])
        kv = kv_pages[page_indices[i]].reshape(-1, combined, head_dim)[:kv_len]
        k = jnp.repeat(kv[:, 0::2], group, axis=1)  # (kv_len, q_heads, d)
        v = jnp.repeat(kv[:, 1::2], group, axis=1)
        qs = q[start:end]
        logits = jnp.einsum("qhd,khd->hqk", qs, k, precision=jax.lax.Precision.HIGHEST) * SCALE
        rows = kv_len - (end - start) + jnp.arange(end - start)
        logits = jnp.where(jnp.arange(kv_len)[None, :] <= rows[:, None], logits, -jnp.inf)
        weights = jax.nn.softmax(logits, axis=-1)
        outputs.append(jnp.einsum("hqk,khd->qhd", weights, v, precision=jax.lax.Precision.HIGHEST))
    return jnp.concatenate(outputs, axis=0).astype(q.dtype)
