"""Adapter: jax's shipped megablox grouped matmul (`jax.experimental.pallas.ops.tpu.megablox.gmm`, the
public custom-VJP op).

The reference slices each group's rows in a Python loop over `group_sizes`, as grouped-op references
usually do; it cannot be traced with abstract sizes. Upstream's tests compare gmm with such a loop:
expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import megablox as upstream

from tpu_runtime.kernels.templates.grouped_matmul import make_inputs  # noqa: F401 (the template's inputs)

SPACE: dict[str, list[Any]] = {"tile_m": [128, 256], "tile_k": [128, 256], "tile_n": [128, 256]}
DEFAULTS: dict[str, Any] = {"tile_m": 128, "tile_k": 128, "tile_n": 128}
SHAPES: list[dict[str, int]] = [{"m": 256, "k": 128, "n": 128, "groups": 3}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"m": 2048, "k": 1024, "n": 1024, "groups": 8}


def kernel(
    lhs: jax.Array,
    rhs: jax.Array,
    group_sizes: jax.Array,
    *,
    tile_m: int = 128,
    tile_k: int = 128,
    tile_n: int = 128,
) -> jax.Array:
    return upstream.gmm(lhs, rhs, group_sizes, lhs.dtype, tiling=(tile_m, tile_k, tile_n))


def reference(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array) -> jax.Array:
    pieces = []
    start = 0
    for g, size in enumerate(group_sizes):
        rows = lhs[start : start + int(size)]
        pieces.append(jnp.dot(rows, rhs[g], precision=jax.lax.Precision.HIGHEST))
        start += int(size)
    return jnp.concatenate(pieces, axis=0).astype(lhs.dtype)
