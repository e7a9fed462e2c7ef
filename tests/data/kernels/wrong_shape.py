"""Bad input: the kernel returns half the columns the reference returns."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 256}]


def _first_half(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[:, : o_ref.shape[1]]


def kernel(x: jax.Array) -> jax.Array:
    rows, cols = x.shape
    return pl.pallas_call(_first_half, out_shape=jax.ShapeDtypeStruct((rows, cols // 2), x.dtype))(x)


def reference(x: jax.Array) -> jax.Array:
    return x
