"""Planted bug in an imported module: the kernel body lives in `segment_helpers.py` and reads one element
past a scalar-prefetch array there (one bound per block, where it needs one per block plus one).

The same computation as `oob_prefetch.py`, whose inputs and reference it takes; only the body moved."""

from typing import Any

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from oob_prefetch import make_inputs, reference  # noqa: F401 (kernel check reads them)
from segment_helpers import scale_by_width

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 4}]


def kernel(x: jax.Array, bounds: jax.Array) -> jax.Array:
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 128), lambda i, b: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i, b: (i, 0)),
    )
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(scale_by_width, out_shape=out_shape, grid_spec=grid_spec)(bounds, x)
