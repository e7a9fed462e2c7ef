"""Planted cheat: tuned to the test shape. The grid size is hard-coded for 32 rows, and a branch on the
declared column count picks a different code path, so the declared shape passes and others do not."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 32, "cols": 128}]
DTYPES: list[str] = ["float32"]


def _halve(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = 0.5 * x_ref[...]


def kernel(x: jax.Array) -> jax.Array:
    cols = 128 if x.shape[1] == 128 else x.shape[1]
    spec = pl.BlockSpec((8, cols), lambda i: (i, 0))
    return pl.pallas_call(
        _halve,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(4,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return 0.5 * x
