"""Planted cheat: a pallas_call exists but only copies; the matmul runs in plain jax.numpy."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"m": 128, "k": 128, "n": 128}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    x = rng.standard_normal((shape["m"], shape["k"]), np.float32)
    y = rng.standard_normal((shape["k"], shape["n"]), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(y, dtype)


def _copy(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...]


def kernel(x: jax.Array, y: jax.Array) -> jax.Array:
    product = jnp.dot(x, y)
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(product.shape, product.dtype))(product)


def reference(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.dot(x, y)
