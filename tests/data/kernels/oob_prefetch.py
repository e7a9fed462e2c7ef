"""Planted bug: reads one element past a scalar-prefetch array.

Block i of the output is block i of x times the width of segment i, `starts[i + 1] - starts[i]`. `starts`
should have one entry per block plus one; the wrapper passes one entry per block, so the last grid step
reads `starts[blocks]`, one past the end of the SMEM array.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]
DTYPES: list[str] = ["float32"]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    blocks = shape["blocks"]
    x = rng.standard_normal((8 * blocks, 128), np.float32)
    starts = np.cumsum(rng.integers(1, 5, size=blocks)).astype(np.int32)
    return jnp.asarray(x, dtype), jnp.asarray(starts)


def _scale(starts_ref: Any, x_ref: Any, o_ref: Any) -> None:
    i = pl.program_id(0)
    width = starts_ref[i + 1] - starts_ref[i]
    o_ref[...] = x_ref[...] * width.astype(jnp.float32)


def kernel(x: jax.Array, starts: jax.Array) -> jax.Array:
    blocks = x.shape[0] // 8
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(blocks,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, s: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, s: (i, 0)),
    )
    return pl.pallas_call(_scale, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid_spec=grid_spec)(
        starts, x
    )


def reference(x: jax.Array, starts: jax.Array) -> jax.Array:
    widths = jnp.diff(starts, append=starts[-1:] + 1).astype(x.dtype)
    return x * jnp.repeat(widths, 8)[:, None]
