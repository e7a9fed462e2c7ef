"""A kernel to tune in tests: out = x + 1 over row blocks of `block_rows`.

Two planted traps: block_rows=64 (the largest blocks, so the best estimate) computes the wrong answer and
must never win; block_rows=16 never returns, so its attempt must be stopped by the per-attempt limit.
"""

from __future__ import annotations

import time
from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {"block_rows": [8, 16, 32, 64]}
DEFAULTS: dict[str, Any] = {"block_rows": 8}
SHAPES: list[dict[str, int]] = [{"rows": 64, "cols": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"rows": 8192, "cols": 512}


def _add_one(x_ref: Any, o_ref: Any, *, wrong: bool) -> None:
    o_ref[...] = x_ref[...] + (2.0 if wrong else 1.0)


def kernel(x: jax.Array, *, block_rows: int = 8) -> jax.Array:
    while block_rows == 16:
        time.sleep(0.05)
    rows, cols = x.shape
    spec = pl.BlockSpec((block_rows, cols), lambda i: (i, 0))

    def body(x_ref: Any, o_ref: Any) -> None:
        _add_one(x_ref, o_ref, wrong=block_rows == 64)

    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(rows // block_rows,),
        in_specs=[spec],
        out_specs=spec,
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return x + 1.0
