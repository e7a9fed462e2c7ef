"""A correct block-sparse kernel: a block-diagonal float32 matmul whose grid visits only the diagonal blocks,
so it does 1/blocks of the dense product's work. Its reference is the dense product with the off-diagonal
blocks of w zeroed; FLOPs counted from that reference would be `blocks` times too many."""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"blocks": 2, "size": 128}]
TARGET_SHAPE: dict[str, int] = {"blocks": 8, "size": 512}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    n = shape["blocks"] * shape["size"]
    x = rng.standard_normal((n, n), np.float32)
    w = rng.standard_normal((shape["blocks"], shape["size"], shape["size"]), np.float32)
    return jnp.asarray(x, dtype), jnp.asarray(w, dtype)


def _body(x_ref: Any, w_ref: Any, o_ref: Any) -> None:
    o_ref[...] = jnp.dot(x_ref[...], w_ref[...], preferred_element_type=jnp.float32)


def kernel(x: jax.Array, w: jax.Array) -> jax.Array:
    blocks, size, _ = w.shape
    n = x.shape[0]
    return pl.pallas_call(
        _body,
        out_shape=jax.ShapeDtypeStruct((n, blocks * size), jnp.float32),
        grid=(n // 128, blocks),
        in_specs=[
            pl.BlockSpec((128, size), lambda i, b: (i, b)),
            pl.BlockSpec((None, size, size), lambda i, b: (b, 0, 0)),
        ],
        out_specs=pl.BlockSpec((128, size), lambda i, b: (i, b)),
    )(x, w)


def reference(x: jax.Array, w: jax.Array) -> jax.Array:
    dense = jax.scipy.linalg.block_diag(*[w[b] for b in range(w.shape[0])])
    return jnp.dot(x, dense, precision=jax.lax.Precision.HIGHEST)
