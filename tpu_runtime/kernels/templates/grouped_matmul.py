"""Grouped matmul for mixture-of-experts: rows of `lhs` sorted by expert, each group times its own matrix.

lhs is (m, k) with its rows grouped by expert (group g owns `group_sizes[g]` consecutive rows, sizes sum to
m, a group may be empty); rhs is (groups, k, n); out[r] = lhs[r] @ rhs[group of r].

Row tiles of `block_m` rows may straddle a group boundary, so the work is a list of (row tile, group) items,
built on the device from `group_sizes` and handed to the kernel as scalar-prefetch arrays: the index maps
read them to pick the lhs tile and the expert's rhs block, and the kernel masks the rows of the tile that
belong to another group. Items of one tile are consecutive, so the tile's output block stays resident in VMEM
and accumulates in a float32 scratch buffer that is zeroed on the tile's first item. The item list has a
fixed length (tiles + groups - 1); unused trailing items repeat the last tile and are marked invalid.
"""

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SPACE: dict[str, list[Any]] = {
    "block_m": [128, 256, 512],
    "block_n": [128, 256, 512],
    "block_k": [128, 256, 512],
}
DEFAULTS: dict[str, Any] = {"block_m": 128, "block_n": 128, "block_k": 128}
SHAPES: list[dict[str, int]] = [
    {"m": 256, "k": 128, "n": 128, "groups": 3},
    {"m": 384, "k": 256, "n": 128, "groups": 4},
]
DTYPES: list[str] = ["bfloat16"]
TARGET_SHAPE: dict[str, int] = {"m": 4096, "k": 2048, "n": 2048, "groups": 8}

FIRST, VALID = 1, 2  # bits of the per-item flags


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    m, groups = shape["m"], shape["groups"]
    lhs = rng.standard_normal((m, shape["k"]), np.float32)
    rhs = rng.standard_normal((groups, shape["k"], shape["n"]), np.float32)
    cuts = np.sort(rng.integers(0, m + 1, size=groups - 1))
    sizes = np.diff(np.concatenate([[0], cuts, [m]])).astype(np.int32)
    return jnp.asarray(lhs, dtype), jnp.asarray(rhs, dtype), jnp.asarray(sizes)


def _block(size: int, dim: int) -> int:
    """The block size used: `size` is an upper bound, shrunk to divide `dim` so blocks tile it."""
    return math.gcd(min(size, dim), dim)


def _work_items(group_sizes: jax.Array, m: int, block_m: int) -> tuple[jax.Array, ...]:
    """(group_starts, group_ends, tile_ids, group_ids, flags) for the fixed-length item list."""
    groups = group_sizes.shape[0]
    tiles = m // block_m
    ends = jnp.cumsum(group_sizes).astype(jnp.int32)
    starts = ends - group_sizes
    first_tile = starts // block_m
    last_tile = jnp.maximum(ends - 1, 0) // block_m
    counts = jnp.where(group_sizes > 0, last_tile - first_tile + 1, 0)
    offsets = jnp.cumsum(counts) - counts
    total = jnp.sum(counts)
    item = jnp.arange(tiles + groups - 1, dtype=jnp.int32)
    group_ids = jnp.searchsorted(jnp.cumsum(counts), item, side="right").astype(jnp.int32)
    valid = item < total
    group_ids = jnp.where(valid, jnp.minimum(group_ids, groups - 1), groups - 1)
    tile_ids = jnp.where(valid, first_tile[group_ids] + item - offsets[group_ids], tiles - 1).astype(
        jnp.int32
    )
    previous = jnp.concatenate([jnp.full(1, -1, jnp.int32), tile_ids[:-1]])
    flags = jnp.where(tile_ids != previous, FIRST, 0) + jnp.where(valid, VALID, 0)
    return starts, ends, tile_ids, group_ids, flags.astype(jnp.int32)


def _gmm_kernel(
    starts_ref: Any,
    ends_ref: Any,
    tile_ref: Any,
    group_ref: Any,
    flags_ref: Any,
    lhs_ref: Any,
    rhs_ref: Any,
    o_ref: Any,
    acc_ref: Any,
) -> None:
    item, k_step = pl.program_id(1), pl.program_id(2)
    flags = flags_ref[item]

    @pl.when(jnp.logical_and(flags & FIRST != 0, k_step == 0))
    def _zero() -> None:
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    @pl.when(flags & VALID != 0)
    def _accumulate() -> None:
        group = group_ref[item]
        block_m = lhs_ref.shape[0]
        rows = tile_ref[item] * block_m + jax.lax.broadcasted_iota(jnp.int32, lhs_ref.shape, 0)
        mine = jnp.logical_and(rows >= starts_ref[group], rows < ends_ref[group])
        lhs = jnp.where(mine, lhs_ref[...], jnp.zeros(lhs_ref.shape, lhs_ref.dtype))
        acc_ref[...] += jnp.dot(lhs, rhs_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k_step == pl.num_programs(2) - 1)
    def _store() -> None:
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@functools.partial(jax.jit, static_argnames=("block_m", "block_n", "block_k"))
def kernel(
    lhs: jax.Array,
    rhs: jax.Array,
    group_sizes: jax.Array,
    *,
    block_m: int = 128,
    block_n: int = 128,
    block_k: int = 128,
) -> jax.Array:
    m, k = lhs.shape
    groups, _, n = rhs.shape
    bm, bn, bk = _block(block_m, m), _block(block_n, n), _block(block_k, k)
    items = m // bm + groups - 1
    metadata = _work_items(group_sizes.astype(jnp.int32), m, bm)
    itemsize = jnp.dtype(lhs.dtype).itemsize
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=5,
        grid=(n // bn, items, k // bk),
        in_specs=[
            pl.BlockSpec((bm, bk), lambda j, i, kk, s, e, t, g, f: (t[i], kk)),
            pl.BlockSpec((None, bk, bn), lambda j, i, kk, s, e, t, g, f: (g[i], kk, j)),
        ],
        out_specs=pl.BlockSpec((bm, bn), lambda j, i, kk, s, e, t, g, f: (t[i], j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )
    return pl.pallas_call(
        _gmm_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), lhs.dtype),
        grid_spec=grid_spec,
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary", "arbitrary")),
        cost_estimate=pl.CostEstimate(
            flops=2 * m * k * n, transcendentals=0, bytes_accessed=itemsize * (m * k + groups * k * n + m * n)
        ),
    )(*metadata, lhs, rhs)


def reference(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array) -> jax.Array:
    ends = jnp.cumsum(group_sizes)
    group_of_row = jnp.searchsorted(ends, jnp.arange(lhs.shape[0]), side="right")
    out = jnp.zeros((lhs.shape[0], rhs.shape[2]), jnp.promote_types(lhs.dtype, jnp.float32))
    for g in range(rhs.shape[0]):
        rows = (group_of_row == g)[:, None]
        out = out + jnp.where(rows, jnp.dot(lhs, rhs[g], preferred_element_type=out.dtype), 0)
    return out.astype(lhs.dtype)
