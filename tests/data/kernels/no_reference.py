"""Bad input: no reference function."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]


def _copy(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...]


def kernel(x: jax.Array) -> jax.Array:
    return pl.pallas_call(_copy, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
