"""A correct kernel whose lowering needs to know the TPU generation: Mosaic lowers `jnp.sign` differently
per generation and asks JAX's default device which one it is. Off a TPU VM that device is the CPU, so
lowering must run with a compile-only TPU device as the default device, or it fails with "Unsupported TPU
device kind: cpu", a reason outside the kernel."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 16}]
TARGET_SHAPE: dict[str, int] = {"rows": 1024}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    return (jnp.asarray(rng.standard_normal((shape["rows"], 256), np.float32), dtype),)


def _body(x_ref: Any, o_ref: Any) -> None:
    x = x_ref[...]
    o_ref[...] = jnp.sign(x) * jnp.sqrt(jnp.abs(x))


def kernel(x: jax.Array) -> jax.Array:
    spec = pl.BlockSpec((8, 256), lambda i: (i, 0))
    out_shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return pl.pallas_call(
        _body, out_shape=out_shape, grid=(x.shape[0] // 8,), in_specs=[spec], out_specs=spec
    )(x)


def reference(x: jax.Array) -> jax.Array:
    return jnp.sign(x) * jnp.sqrt(jnp.abs(x))
