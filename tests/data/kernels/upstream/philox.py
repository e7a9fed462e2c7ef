"""Adapter: jax's shipped Philox-4x32 random-bits kernel
(`jax.experimental.pallas.ops.tpu.random.philox.philox_4x32_count`).

The kernel's docstring cites Philox-4x32 of Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3"
(SC 2011, https://doi.org/10.1145/2063384.2063405), ten rounds; each element hashes the counter
(0, flat index + offset, 0, 0) under the key and keeps the XOR of the first two output words. Upstream's
tests (jax tests/pallas/tpu_pallas_random_test.py) only check that uniforms drawn from it lie in [0, 1] and
that split and folded keys differ; the reference here is the algorithm itself, written from the paper in
NumPy with 64-bit products (so it cannot be traced and runs eagerly), compared exactly: expected pass.
"""

from typing import Any

import jax
import numpy as np
from _adapter_inputs import key_and_template as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental.pallas.ops.tpu.random import philox as upstream

SPACE: dict[str, list[Any]] = {"block_rows": [128, 256], "block_cols": [128, 256]}
DEFAULTS: dict[str, Any] = {"block_rows": 128, "block_cols": 256}
SHAPES: list[dict[str, int]] = [{"rows": 256, "cols": 512}]
DTYPES: list[str] = ["uint32"]
TARGET_SHAPE: dict[str, int] = {"rows": 4096, "cols": 4096}
OFFSET = 5
#: Philox-4x32 round multipliers and Weyl key increments, as the paper gives them.
MULTIPLIERS = (0xD2511F53, 0xCD9E8D57)
KEY_STEPS = (0x9E3779B9, 0xBB67AE85)
ROUNDS = 10


def kernel(key: jax.Array, like: jax.Array, *, block_rows: int = 128, block_cols: int = 256) -> jax.Array:
    rows, cols = like.shape
    block = (min(block_rows, rows), min(block_cols, cols))
    return upstream.philox_4x32_kernel(key, like.shape, like.shape, block_size=block, offset=OFFSET)


def reference(key: jax.Array, like: jax.Array) -> np.ndarray:
    mask = np.uint64(0xFFFFFFFF)
    n = int(np.prod(like.shape))
    counter = [np.zeros(n, np.uint64), np.arange(n, dtype=np.uint64) + OFFSET, np.zeros(n, np.uint64)]
    counter.append(np.zeros(n, np.uint64))
    k0, k1 = (np.uint64(int(w)) for w in np.asarray(key))
    for r in range(ROUNDS):
        p0 = np.uint64(MULTIPLIERS[0]) * counter[0]
        p1 = np.uint64(MULTIPLIERS[1]) * counter[2]
        counter = [
            ((p1 >> np.uint64(32)) ^ counter[1] ^ k0) & mask,
            p1 & mask,
            ((p0 >> np.uint64(32)) ^ counter[3] ^ k1) & mask,
            p0 & mask,
        ]
        if r != ROUNDS - 1:
            k0 = (k0 + np.uint64(KEY_STEPS[0])) & mask
            k1 = (k1 + np.uint64(KEY_STEPS[1])) & mask
    return (counter[0] ^ counter[1]).astype(np.uint32).reshape(like.shape)
