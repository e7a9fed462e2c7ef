"""Adapter: jax's shipped Threefry-2x32 random-bits kernel
(`jax.experimental.pallas.ops.tpu.random.threefry.threefry_2x32_count`).

Each grid step hashes the flat indices of its block. Upstream's tests
(jax tests/pallas/tpu_pallas_random_test.py) require the bits to equal jax's own threefry2x32 bits for the
same key, exactly: the reference is `jax.random.bits`, the verdict exact (uint32), expected pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from _adapter_inputs import key_and_template as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental.pallas.ops.tpu.random import threefry as upstream

SPACE: dict[str, list[Any]] = {"block_rows": [128, 256], "block_cols": [128, 256]}
DEFAULTS: dict[str, Any] = {"block_rows": 128, "block_cols": 256}
SHAPES: list[dict[str, int]] = [{"rows": 256, "cols": 512}]
DTYPES: list[str] = ["uint32"]
TARGET_SHAPE: dict[str, int] = {"rows": 4096, "cols": 4096}


def kernel(key: jax.Array, like: jax.Array, *, block_rows: int = 128, block_cols: int = 256) -> jax.Array:
    rows, cols = like.shape
    block = (min(block_rows, rows), min(block_cols, cols))
    return upstream.threefry_2x32_count(key, like.shape, like.shape, block_size=block)


def reference(key: jax.Array, like: jax.Array) -> jax.Array:
    with jax.threefry_partitionable(True):
        return jax.random.bits(jax.random.wrap_key_data(key, impl="threefry2x32"), like.shape, jnp.uint32)
