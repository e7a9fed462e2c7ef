"""Planted bug: two scalar-prefetch operands of the same shape, and the kernel reads one past the end of the
second. Block i of the output is block i of x times `ends[i + 1] - starts[i]`; `ends` has one entry per
block, so the last grid step reads `ends[blocks]`. Matching shapes cannot tell the two refs apart."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    blocks = shape["blocks"]
    x = rng.standard_normal((8 * blocks, 128), np.float32)
    starts = rng.integers(0, 4, size=blocks).astype(np.int32)
    ends = (starts + rng.integers(1, 5, size=blocks)).astype(np.int32)
    return jnp.asarray(x, dtype), jnp.asarray(starts), jnp.asarray(ends)


def _body(starts_ref: Any, ends_ref: Any, x_ref: Any, o_ref: Any) -> None:
    i = pl.program_id(0)
    start = starts_ref[i]
    end = ends_ref[i + 1]
    o_ref[...] = x_ref[...] * (end - start).astype(jnp.float32)


def kernel(x: jax.Array, starts: jax.Array, ends: jax.Array) -> jax.Array:
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=2,
        grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, s, e: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, s, e: (i, 0)),
    )
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(_body, out_shape=out_shape, grid_spec=grid_spec)(starts, ends, x)


def reference(x: jax.Array, starts: jax.Array, ends: jax.Array) -> jax.Array:
    widths = (ends - starts).astype(x.dtype)
    return x * jnp.repeat(widths, 8)[:, None]
