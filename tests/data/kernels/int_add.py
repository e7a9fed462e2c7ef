"""A correct int32 kernel: its reference is exact, so the check compares integers, not floats."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 16}]
DTYPES: list[str] = ["int32"]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    a = rng.integers(-1000, 1000, size=(shape["rows"], 128)).astype(np.int32)
    b = rng.integers(-1000, 1000, size=(shape["rows"], 128)).astype(np.int32)
    return jnp.asarray(a), jnp.asarray(b)


def _body(a_ref: Any, b_ref: Any, o_ref: Any) -> None:
    o_ref[...] = a_ref[...] * 3 + b_ref[...]


def kernel(a: jax.Array, b: jax.Array) -> jax.Array:
    return pl.pallas_call(_body, out_shape=jax.ShapeDtypeStruct(a.shape, a.dtype))(a, b)


def reference(a: jax.Array, b: jax.Array) -> jax.Array:
    return a * 3 + b
