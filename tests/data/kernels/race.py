"""Planted bug: a data race. The kernel starts a DMA from HBM into VMEM scratch and reads the scratch
before waiting for the copy to finish."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]
DTYPES: list[str] = ["float32"]


def _copy_plus_one(x_hbm: Any, o_ref: Any, buf: Any, sem: Any) -> None:
    copy = pltpu.make_async_copy(x_hbm, buf, sem)
    copy.start()
    o_ref[...] = buf[...] + 1.0
    copy.wait()


def kernel(x: jax.Array) -> jax.Array:
    return pl.pallas_call(
        _copy_plus_one,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(memory_space=pltpu.VMEM),
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return x + 1.0
