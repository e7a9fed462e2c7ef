"""Bad input: the kernel raises before it builds its pallas_call."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    return (jnp.asarray(rng.standard_normal((shape["rows"], shape["cols"]), np.float32), dtype),)


def kernel(x: jax.Array) -> jax.Array:
    if x.ndim == 2:
        raise ValueError("row-major layouts are not supported yet")
    return x


def reference(x: jax.Array) -> jax.Array:
    return x
