"""A correct kernel whose reference cannot be traced: it walks the groups in Python with their concrete
sizes (`int(size)`), as references of grouped and ragged ops usually do. The checker must run such a
reference eagerly, and the compile and PyTorch stages must not need to trace it.

Row r of the output is row r of x times the number of its group (groups are consecutive runs of rows)."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 32, "groups": 3}]
TARGET_SHAPE: dict[str, int] = {"rows": 1024, "groups": 8}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    rows, groups = shape["rows"], shape["groups"]
    cuts = np.sort(rng.integers(0, rows + 1, size=groups - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [rows]])).astype(np.int32)
    group_of_row = np.repeat(np.arange(groups, dtype=np.int32), sizes)
    x = rng.standard_normal((rows, 128), np.float32)
    return (
        jnp.asarray(x, dtype),
        jnp.asarray(sizes),
        jnp.asarray(group_of_row[:, None] * np.ones((1, 128), np.int32)),
    )


def _body(x_ref: Any, g_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * g_ref[...].astype(jnp.float32)


def kernel(x: jax.Array, sizes: jax.Array, group_of_row: jax.Array) -> jax.Array:
    spec = pl.BlockSpec((8, 128), lambda i: (i, 0))
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    call = pl.pallas_call(
        _body, out_shape=out_shape, grid=(x.shape[0] // 8,), in_specs=[spec, spec], out_specs=spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)),
    )  # fmt: skip
    return call(x, group_of_row)


def reference(x: jax.Array, sizes: jax.Array, group_of_row: jax.Array) -> jax.Array:
    pieces = []
    start = 0
    for g, size in enumerate(sizes):
        pieces.append(x[start : start + int(size)] * g)
        start += int(size)
    return jnp.concatenate(pieces, axis=0)
