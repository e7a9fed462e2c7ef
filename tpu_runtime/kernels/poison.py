"""Poison output blocks so that elements a kernel never writes show up as NaN (integers: their maximum).

On a TPU an output block lives in a VMEM buffer that is reused from one block to the next; a kernel that
skips writing part of a block leaves whatever the previous block left there, which looks plausible and
passes a careless test. TPU interpret mode reuses its buffer the same way. So while the correctness stage
runs, `pl.pallas_call` is wrapped: the kernel body first fills each pipelined output block with poison
whenever the block index differs from the one the buffer held at the previous grid step (a new block, as
the real pipeline sees it), then runs the user's body. Blocks that stay resident across an axis (an
accumulator revisited along the contraction axis) are poisoned once, on entry, exactly like fresh VMEM.

The previous block index is kept in an extra SMEM scratch array, since the interpreter visits 'parallel'
grid dimensions in a shuffled order. Outputs in HBM/ANY memory (written by manual DMA) need no wrapper:
the interpreter already fills fresh HBM buffers with NaN. Outputs aliased to an input are left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np


def poison_value(dtype: Any) -> Any:
    """NaN for floating outputs, the largest value for integers, True for booleans."""
    import jax.numpy as jnp

    dt = jnp.dtype(dtype)
    if jnp.issubdtype(dt, jnp.floating):
        return float("nan")
    if jnp.issubdtype(dt, jnp.integer):
        return int(np.iinfo(dt).max)
    return True


@contextlib.contextmanager
def poisoned_outputs(enabled: bool = True) -> Iterator[None]:
    """While active, every `pl.pallas_call` poisons its output blocks on entry (see module docstring)."""
    from jax.experimental import pallas as pl

    if not enabled:
        yield
        return
    original = pl.pallas_call
    pl.pallas_call = _make_wrapper(original)
    try:
        yield
    finally:
        pl.pallas_call = original


def _flat_out_specs(out_specs: Any, n_out: int) -> list[Any] | None:
    """One BlockSpec (or None for 'whole array') per output, or None when the tree is not understood."""
    import jax
    from jax._src.pallas import core as pallas_core
    from jax.experimental import pallas as pl

    if out_specs is pallas_core.no_block_spec or out_specs is None:
        return [None] * n_out
    if isinstance(out_specs, pl.BlockSpec):
        return [out_specs] if n_out == 1 else None
    leaves = jax.tree.leaves(out_specs, is_leaf=lambda s: isinstance(s, pl.BlockSpec) or s is None)
    return list(leaves) if len(leaves) == n_out else None


def _pipelined(spec: Any) -> bool:
    """A block the Pallas pipeline copies between HBM and VMEM/SMEM (not a raw HBM/ANY ref)."""
    from jax._src.pallas import core as pallas_core
    from jax.experimental.pallas import tpu as pltpu

    if spec is None:
        return True
    space = getattr(spec, "memory_space", None)
    return space in (None, pltpu.VMEM, pltpu.SMEM, pallas_core.MemorySpace.DEFAULT)


def _make_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    from jax._src.pallas import core as pallas_core

    def pallas_call(
        kernel: Callable[..., Any],
        out_shape: Any = None,
        *,
        grid_spec: Any = None,
        grid: Any = (),
        in_specs: Any = pallas_core.no_block_spec,
        out_specs: Any = pallas_core.no_block_spec,
        scratch_shapes: Any = (),
        **kwargs: Any,
    ) -> Callable[..., Any]:
        def untouched() -> Callable[..., Any]:
            return original(
                kernel,
                out_shape,
                grid_spec=grid_spec,
                grid=grid,
                in_specs=in_specs,
                out_specs=out_specs,
                scratch_shapes=scratch_shapes,
                **kwargs,
            )

        plan = _plan(out_shape, grid_spec, grid, in_specs, out_specs, scratch_shapes, kwargs)
        if plan is None:
            return untouched()
        return _poisoning_call(original, kernel, out_shape, plan, kwargs)

    return pallas_call


@dataclass
class _Plan:
    """What the wrapper needs to know about one pallas_call."""

    grid: tuple[Any, ...]
    in_specs: Any
    out_specs: Any
    scratch: list[Any]
    n_prefetch: int
    specs: list[Any]
    poisoned: list[int]
    index_lengths: list[int]
    grid_spec_kind: str


def _plan(
    out_shape: Any,
    grid_spec: Any,
    grid: Any,
    in_specs: Any,
    out_specs: Any,
    scratch_shapes: Any,
    kwargs: dict[str, Any],
) -> _Plan | None:
    import jax
    from jax.experimental.pallas import tpu as pltpu

    kind = "none"
    n_prefetch = 0
    if grid_spec is not None:
        kind = "prefetch" if isinstance(grid_spec, pltpu.PrefetchScalarGridSpec) else "plain"
        n_prefetch = int(getattr(grid_spec, "num_scalar_prefetch", 0) or 0)
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
    grid_t = (grid,) if isinstance(grid, int) else tuple(grid or ())
    if not all(isinstance(g, int) for g in grid_t):
        return None  # dynamic grid sizes: leave the call alone
    if not isinstance(scratch_shapes, (list, tuple)):
        return None
    out_leaves = jax.tree.leaves(out_shape)
    specs = _flat_out_specs(out_specs, len(out_leaves))
    if specs is None:
        return None
    aliased = set(dict(kwargs.get("input_output_aliases", {}) or {}).values())
    poisoned = [i for i, spec in enumerate(specs) if i not in aliased and _pipelined(spec)]
    if not poisoned:
        return None
    lengths = []
    for i in poisoned:
        spec = specs[i]
        shape = getattr(out_leaves[i], "shape", ())
        block = getattr(spec, "block_shape", None) if spec is not None else None
        lengths.append(len(block) if block is not None else len(shape))
    return _Plan(
        grid_t, in_specs, out_specs, list(scratch_shapes), n_prefetch, specs, poisoned, lengths, kind
    )


def _poisoning_call(
    original: Callable[..., Any],
    kernel: Callable[..., Any],
    out_shape: Any,
    plan: _Plan,
    kwargs: dict[str, Any],
) -> Callable[..., Any]:
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    n_out = len(jax.tree.leaves(out_shape))
    slots = max(1, sum(plan.index_lengths))

    def call(*args: Any) -> Any:
        n_in = len(args) - plan.n_prefetch

        def body(*refs: Any) -> None:
            user_refs, state = refs[:-1], refs[-1]
            prefetch = refs[: plan.n_prefetch]
            outs = refs[plan.n_prefetch + n_in : plan.n_prefetch + n_in + n_out]
            ids = tuple(pl.program_id(d) for d in range(len(plan.grid)))
            offset = 0
            for i, length in zip(plan.poisoned, plan.index_lengths, strict=True):
                _poison_on_entry(plan.specs[i], outs[i], state, offset, length, ids, prefetch)
                offset += length
            kernel(*user_refs)

        scratch = [*plan.scratch, pltpu.SMEM((slots,), jnp.int32)]
        if plan.grid_spec_kind == "none":
            return original(
                body,
                out_shape,
                grid=plan.grid,
                in_specs=plan.in_specs,
                out_specs=plan.out_specs,
                scratch_shapes=scratch,
                **kwargs,
            )(*args)
        if plan.grid_spec_kind == "prefetch":
            spec: Any = pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=plan.n_prefetch,
                grid=plan.grid,
                in_specs=plan.in_specs,
                out_specs=plan.out_specs,
                scratch_shapes=scratch,
            )
        else:
            spec = pl.GridSpec(
                grid=plan.grid, in_specs=plan.in_specs, out_specs=plan.out_specs, scratch_shapes=scratch
            )
        return original(body, out_shape, grid_spec=spec, **kwargs)(*args)

    return call


def _poison_on_entry(
    spec: Any, ref: Any, state: Any, offset: int, length: int, ids: tuple[Any, ...], prefetch: tuple[Any, ...]
) -> None:
    """Fill `ref` with poison when its block index differs from the one recorded in `state`.

    `state` starts as the interpreter's uninitialized SMEM value (int32 max), so the first visit always
    differs; afterwards it holds the block index the buffer was last filled for.
    """
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    index_map = getattr(spec, "index_map", None) if spec is not None else None
    if index_map is None:
        current: tuple[Any, ...] = tuple(jnp.int32(0) for _ in range(length))
    else:
        raw = index_map(*ids, *prefetch)
        raw = raw if isinstance(raw, tuple) else (raw,)
        current = tuple(jnp.asarray(getattr(c, "index", c), jnp.int32) for c in raw)
    changed = jnp.bool_(False)
    for j, value in enumerate(current):
        changed = jnp.logical_or(changed, state[offset + j] != value)

    @pl.when(changed)
    def _fill() -> None:
        ref[...] = jnp.full(ref.shape, poison_value(ref.dtype), ref.dtype)
        for j, value in enumerate(current):
            state[offset + j] = value
