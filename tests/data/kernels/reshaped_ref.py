"""A correct kernel that JAX's TPU interpreter (jax 0.10) cannot run: it reads its input through a reshaped
ref (`x_ref.reshape(...)`), a view the interpreter does not implement, so interpret mode fails inside JAX.
Mosaic lowers and compiles it; the checker must say it cannot be checked in interpret mode, not FAIL."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 16}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    return (jnp.asarray(rng.standard_normal((shape["rows"], 8, 128), np.float32), dtype),)


def _body(x_ref: Any, o_ref: Any) -> None:
    flat = x_ref.reshape(x_ref.shape[0] * 8, 128)
    o_ref[...] = flat[...] * 2.0


def kernel(x: jax.Array) -> jax.Array:
    rows = x.shape[0]
    out_shape = jax.ShapeDtypeStruct((rows * 8, 128), x.dtype)
    return pl.pallas_call(_body, out_shape=out_shape)(x)


def reference(x: jax.Array) -> jax.Array:
    return (x * 2.0).reshape(-1, 128)
