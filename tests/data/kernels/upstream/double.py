"""Adapter: jax's shipped example kernel (`jax.experimental.pallas.ops.tpu.example_kernel.double`).

It doubles its input in one whole-array block. Upstream's only test of it
(jax tests/pallas/tpu_pallas_test.py, `test_mlir_location`) lowers it and checks source locations, not
values; that it returns 2 * x is its own definition: expected verdict pass.
"""

from typing import Any

import jax
from _adapter_inputs import normal_arrays
from jax.experimental.pallas.ops.tpu import example_kernel as upstream

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"rows": 512, "cols": 1024}


make_inputs = normal_arrays(1, "rows", "cols")


def kernel(x: jax.Array) -> jax.Array:
    return upstream.double(x)


def reference(x: jax.Array) -> jax.Array:
    return 2 * x
