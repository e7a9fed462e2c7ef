"""Planted bug in an imported module: the kernel body lives in `segment_helpers.py` and reads one element
past a scalar-prefetch array there (one bound per block, where it needs one per block plus one)."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from segment_helpers import scale_by_width

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    blocks = shape["blocks"]
    x = rng.standard_normal((8 * blocks, 128), np.float32)
    bounds = np.cumsum(rng.integers(1, 5, size=blocks)).astype(np.int32)
    return jnp.asarray(x, dtype), jnp.asarray(bounds)


def kernel(x: jax.Array, bounds: jax.Array) -> jax.Array:
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, b: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, b: (i, 0)),
    )
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(scale_by_width, out_shape=out_shape, grid_spec=grid_spec)(bounds, x)


def reference(x: jax.Array, bounds: jax.Array) -> jax.Array:
    widths = jnp.diff(bounds, append=bounds[-1:] + 1).astype(x.dtype)
    return x * jnp.repeat(widths, 8)[:, None]
