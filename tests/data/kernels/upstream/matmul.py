"""Adapter: jax's shipped Pallas TPU matmul (`jax.experimental.pallas.ops.tpu.matmul.matmul`), imported.

Upstream's export compatibility test (jax tests/pallas/export_back_compat_pallas_test.py) checks it against
stored results of the same product at rtol 2e-7, so it computes `x @ y`: expected verdict pass.
"""

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental.pallas.ops.tpu import matmul as upstream

from tpu_runtime.kernels.templates.matmul import make_inputs  # noqa: F401 (the template's inputs)

SPACE: dict[str, list[Any]] = {"block_m": [128, 256], "block_n": [128, 256], "block_k": [128, 256]}
DEFAULTS: dict[str, Any] = {"block_m": 128, "block_n": 128, "block_k": 128}
SHAPES: list[dict[str, int]] = [{"m": 256, "k": 256, "n": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"m": 2048, "k": 2048, "n": 2048}


def kernel(
    x: jax.Array, y: jax.Array, *, block_m: int = 128, block_n: int = 128, block_k: int = 128
) -> jax.Array:
    return upstream.matmul(x, y, block_shape=(block_m, block_n), block_k=block_k)


def reference(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.dot(x, y, precision=jax.lax.Precision.HIGHEST)
