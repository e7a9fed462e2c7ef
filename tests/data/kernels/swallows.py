"""Planted cheat: errors from the Pallas path are swallowed and a plain-jnp result returned instead."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]


def _square(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * x_ref[...]


def kernel(x: jax.Array) -> jax.Array:
    try:
        return pl.pallas_call(_square, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
    except Exception:
        return x * x


def reference(x: jax.Array) -> jax.Array:
    return x * x
