"""Planted cheat: the Pallas kernel only copies its input; the answer comes from the reference."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]
DTYPES: list[str] = ["float32"]


def _copy(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...]


def kernel(x: jax.Array) -> jax.Array:
    copied = pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    return reference(copied)


def reference(x: jax.Array) -> jax.Array:
    return jnp.tanh(x) * 3.0
