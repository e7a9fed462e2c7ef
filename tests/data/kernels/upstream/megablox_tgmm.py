"""Adapter: jax's shipped megablox transposed grouped matmul
(`jax.experimental.pallas.ops.tpu.megablox.gmm.tgmm`): out[g] = lhs[:, rows of g] @ rhs[rows of g, :], the
weight gradient of a grouped matmul. The reference loops over the groups in Python. Upstream's tests
(jax tests/pallas/tpu_gmm_test.py) check it as gmm's rhs gradient against a per-group loop's: expected
verdict pass.
"""

import importlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

upstream = importlib.import_module("jax.experimental.pallas.ops.tpu.megablox.gmm")

SPACE: dict[str, list[Any]] = {"tile_m": [128, 256]}
DEFAULTS: dict[str, Any] = {"tile_m": 128}
SHAPES: list[dict[str, int]] = [{"m": 256, "k": 128, "n": 128, "groups": 3}]
TARGET_SHAPE: dict[str, int] = {"m": 2048, "k": 1024, "n": 1024, "groups": 8}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    m, groups = shape["m"], shape["groups"]
    lhs_t = rng.standard_normal((shape["k"], m), np.float32)
    rhs = rng.standard_normal((m, shape["n"]), np.float32)
    cuts = np.sort(rng.integers(0, m + 1, size=groups - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [m]])).astype(np.int32)
    return jnp.asarray(lhs_t, dtype), jnp.asarray(rhs, dtype), jnp.asarray(sizes)


def kernel(lhs_t: jax.Array, rhs: jax.Array, group_sizes: jax.Array, *, tile_m: int = 128) -> jax.Array:
    return upstream.tgmm(lhs_t, rhs, group_sizes, lhs_t.dtype, tiling=(tile_m, 128, 128))


def reference(lhs_t: jax.Array, rhs: jax.Array, group_sizes: jax.Array) -> jax.Array:
    out = []
    start = 0
    for size in group_sizes:
        rows = slice(start, start + int(size))
        out.append(jnp.dot(lhs_t[:, rows], rhs[rows], precision=jax.lax.Precision.HIGHEST))
        start += int(size)
    return jnp.stack(out).astype(lhs_t.dtype)
