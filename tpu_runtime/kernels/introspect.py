"""What a kernel's jaxpr says about it: its pallas_calls, their VMEM footprint, their HBM traffic, and how
much work happens outside them.

These read Pallas' internal `GridMapping`/`BlockMapping` (jax 0.10), the one place where a kernel's grid,
block shapes and index maps are canonical. Keep all such internals in this module.

* VMEM model: each pipelined block is buffered (two buffers unless `pipeline_mode` says otherwise) and
  every buffer is padded to the TPU tile (last dim to 128 lanes, second-to-last to 8 sublanes x packing:
  8 for 32-bit, 16 for 16-bit, 32 for 8-bit types); VMEM scratch is padded the same way.
* HBM traffic model: the Pallas TPU pipeline copies a block only when its block index differs from the
  previous grid step's, so evaluating every index map over the grid (row-major, last axis fastest) and
  counting the changes gives the bytes moved. Blocks in HBM/ANY memory (manual DMA) are counted once.
  Scalar-prefetch index maps need the prefetch values, so the kernel's wrapper code is evaluated on real
  inputs with every pallas_call replaced by zeros (`concrete_pallas_operands`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tpu_runtime.tpu_tiling import tile_padded

#: Primitives whose cost is one operation per output element and that count as "doing the work".
_ELEMENTWISE = frozenset(
    {
        "add", "sub", "mul", "div", "max", "min", "neg", "abs", "integer_pow", "pow", "exp", "exp2",
        "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan", "sqrt", "rsqrt", "cbrt",
        "erf", "erf_inv", "atan2", "square", "sign", "rem",
    }
)  # fmt: skip
_REDUCTIONS = frozenset(
    {
        "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin", "cumsum",
        "cummax", "cummin", "cumprod", "cumlogsumexp", "reduce_and", "reduce_or",
    }
)  # fmt: skip
_CALLS = (
    "jit",
    "pjit",
    "closed_call",
    "core_call",
    "remat",
    "checkpoint",
    "custom_jvp_call",
    "custom_vjp_call",
)
MAX_MODELED_STEPS = 4_000_000


@dataclass
class PallasCallInfo:
    """One pallas_call as the kernel traced it."""

    name: str
    grid: tuple[int, ...]
    steps: int
    num_prefetch: int
    num_inputs: int
    num_outputs: int
    vmem_bytes: int
    vmem_limit_bytes: int | None
    cost_flops: float | None
    cost_bytes: float | None
    dimension_semantics: tuple[str, ...] = ()
    operands: list[str] = field(default_factory=list)


@dataclass
class Traffic:
    """Modelled HBM<->VMEM bytes of one kernel invocation (all its pallas_calls)."""

    bytes: float
    steps: int
    exact: bool
    note: str = ""


def pallas_call_eqns(closed_jaxpr: Any) -> list[Any]:
    """Every pallas_call equation, looking through jit, call and control-flow sub-jaxprs (not into the
    kernel bodies)."""
    found: list[Any] = []

    def walk(jaxpr: Any) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pallas_call":
                found.append(eqn)
                continue
            for sub in _sub_jaxprs(eqn):
                walk(sub)

    walk(closed_jaxpr.jaxpr)
    return found


def _sub_jaxprs(eqn: Any) -> list[Any]:
    from jax._src import core

    subs: list[Any] = []

    def visit(value: Any) -> None:
        if isinstance(value, core.ClosedJaxpr):
            subs.append(value.jaxpr)
        elif isinstance(value, core.Jaxpr):
            subs.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                visit(item)

    for value in eqn.params.values():
        visit(value)
    return subs


def _space_name(space: Any) -> str:
    return str(getattr(space, "value", space)).lower()


def _pipelined_vmem(space: Any) -> bool:
    return _space_name(space) in ("default", "vmem", "none")


def _manual(space: Any) -> bool:
    return _space_name(space) in ("any", "hbm")


def tiled_bytes(shape: tuple[int, ...], dtype: Any) -> int:
    """Bytes of an array in VMEM once padded to the TPU tile (see module docstring)."""
    itemsize = np.dtype(dtype).itemsize
    dims = [int(d) for d in shape] or [1]
    if len(dims) == 1:
        dims = [1, *dims]
    return math.prod(tile_padded(dims, 8 * itemsize)) * itemsize


def describe(eqn: Any) -> PallasCallInfo:
    """Grid, VMEM model and the kernel's own cost estimate of one pallas_call equation."""
    gm = eqn.params["grid_mapping"]
    grid = tuple(int(g) if isinstance(g, (int, np.integer)) else -1 for g in gm.grid)
    steps = math.prod(grid) if all(g >= 0 for g in grid) else -1
    vmem = 0
    operands = []
    for bm in gm.block_mappings:
        aval = bm.transformed_block_aval
        operands.append(f"{bm.origin}: block {tuple(aval.shape)} of {bm.array_aval.str_short()}")
        if _pipelined_vmem(aval.memory_space):
            buffers = getattr(bm.pipeline_mode, "buffer_count", None) or 2
            vmem += buffers * tiled_bytes(tuple(aval.shape), bm.array_aval.dtype)
    for scratch in gm.scratch_avals:
        space = getattr(scratch, "memory_space", None)
        inner = getattr(scratch, "inner_aval", scratch)
        if _pipelined_vmem(space) and hasattr(inner, "dtype") and hasattr(inner, "shape"):
            try:
                vmem += tiled_bytes(tuple(inner.shape), inner.dtype)
            except TypeError:  # semaphore and other non-numeric scratch types hold no VMEM we model
                continue
    params = eqn.params.get("compiler_params")
    mosaic = params.get("mosaic_tpu") if isinstance(params, dict) else params
    limit = getattr(mosaic, "vmem_limit_bytes", None)
    semantics = tuple(
        str(s).split(".")[-1].lower() for s in (getattr(mosaic, "dimension_semantics", None) or ())
    )
    cost = eqn.params.get("cost_estimate")
    debug = getattr(eqn.params.get("jaxpr"), "debug_info", None)
    name = str(eqn.params.get("name") or getattr(debug, "func_name", None) or "pallas_call")
    return PallasCallInfo(
        name=name,
        grid=grid,
        steps=steps,
        num_prefetch=int(gm.num_index_operands),
        num_inputs=int(gm.num_inputs),
        num_outputs=int(gm.num_outputs),
        vmem_bytes=vmem,
        vmem_limit_bytes=int(limit) if limit else None,
        cost_flops=float(cost.flops) if cost is not None else None,
        cost_bytes=float(cost.bytes_accessed) if cost is not None else None,
        dimension_semantics=semantics,
        operands=operands,
    )


def work(closed_jaxpr: Any, *, skip_pallas: bool = True) -> float:
    """Operations the jaxpr performs outside pallas_calls: matmul FLOPs, elementwise math, reductions."""

    def eqn_work(eqn: Any) -> float:
        name = eqn.primitive.name
        if name == "pallas_call":
            return 0.0 if skip_pallas else float("nan")
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            contracted = math.prod(lhs[d] for d in lhs_contract)
            return 2.0 * _size(eqn.outvars[0].aval) * contracted
        if name == "conv_general_dilated":
            rhs = eqn.invars[1].aval.shape
            return 2.0 * _size(eqn.outvars[0].aval) * math.prod(rhs) / max(rhs)
        if name in _ELEMENTWISE:
            return float(_size(eqn.outvars[0].aval))
        if name in _REDUCTIONS:
            return float(_size(eqn.invars[0].aval))
        subs = _sub_jaxprs(eqn)
        if not subs:
            return 0.0
        if name == "cond":
            return max(walk(s) for s in subs)
        total = sum(walk(s) for s in subs)
        return total * int(eqn.params.get("length", 1)) if name == "scan" else total

    def walk(jaxpr: Any) -> float:
        return sum(eqn_work(e) for e in jaxpr.eqns)

    return walk(closed_jaxpr.jaxpr)


def _size(aval: Any) -> int:
    return math.prod(getattr(aval, "shape", ()) or (1,))


def concrete_pallas_operands(fn: Any, args: tuple[Any, ...]) -> list[tuple[Any, list[Any]]]:
    """Run the kernel's wrapper code on `args` with every pallas_call replaced by zeros; return each
    pallas_call equation with the concrete operands it received (scalar-prefetch values included)."""
    import jax
    import jax.numpy as jnp
    from jax._src import core

    closed = jax.make_jaxpr(fn)(*args)
    found: list[tuple[Any, list[Any]]] = []

    def run(jaxpr: Any, consts: Any, values: list[Any]) -> list[Any]:
        env: dict[Any, Any] = {}

        def read(var: Any) -> Any:
            return var.val if isinstance(var, core.Literal) else env[var]

        for var, value in zip(jaxpr.constvars, consts, strict=True):
            env[var] = value
        for var, value in zip(jaxpr.invars, values, strict=True):
            env[var] = value
        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            if name == "pallas_call":
                found.append((eqn, ins))
                outs: Any = [jnp.zeros(v.aval.shape, v.aval.dtype) for v in eqn.outvars]
            elif name in _CALLS and _call_jaxpr(eqn) is not None:
                sub = _call_jaxpr(eqn)
                outs = run(sub.jaxpr, sub.consts, ins)
            else:
                params = eqn.primitive.get_bind_params(eqn.params)
                with eqn.ctx.manager:
                    outs = eqn.primitive.bind(*ins, **params)
                outs = outs if eqn.primitive.multiple_results else [outs]
            for var, value in zip(eqn.outvars, outs, strict=True):
                if not isinstance(var, core.DropVar):
                    env[var] = value
        return [read(v) for v in jaxpr.outvars]

    run(closed.jaxpr, closed.consts, list(jax.tree.leaves(args)))
    return found


def _call_jaxpr(eqn: Any) -> Any:
    from jax._src import core

    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        value = eqn.params.get(key)
        if isinstance(value, core.ClosedJaxpr):
            return value
        if isinstance(value, core.Jaxpr):
            return core.ClosedJaxpr(value, ())
    return None


def hbm_traffic(eqn: Any, operands: list[Any] | None) -> Traffic:
    """Bytes the pipeline moves for one pallas_call (see module docstring); `operands` as recorded by
    `concrete_pallas_operands`, or None when only shapes are known (prefetch-driven maps then count every
    step as a new block)."""
    import jax
    import jax.numpy as jnp
    from jax._src import core
    from jax._src.state.discharge import discharge_state

    gm = eqn.params["grid_mapping"]
    grid = tuple(gm.grid)
    if not all(isinstance(g, (int, np.integer)) for g in grid):
        return Traffic(bytes=float("nan"), steps=-1, exact=False, note="dynamic grid: traffic not modelled")
    steps = math.prod(int(g) for g in grid) if grid else 1
    if steps > MAX_MODELED_STEPS:
        return Traffic(bytes=float("nan"), steps=steps, exact=False, note=f"{steps} grid steps: not modelled")
    n_dyn = int(gm.num_dynamic_grid_bounds)
    n_prefetch = int(gm.num_index_operands)
    prefetch = None if operands is None else [jnp.asarray(v) for v in operands[n_dyn : n_dyn + n_prefetch]]
    points = [jnp.asarray(p.reshape(-1), jnp.int32) for p in np.indices(grid)] if grid else []
    total = 0.0
    exact = True
    notes: list[str] = []
    for bm in gm.block_mappings:
        aval = bm.transformed_block_aval
        block_bytes = math.prod(aval.shape) * np.dtype(bm.array_aval.dtype).itemsize
        if _manual(aval.memory_space):
            total += math.prod(bm.array_aval.shape) * np.dtype(bm.array_aval.dtype).itemsize
            exact = False
            notes.append(f"{bm.origin} is copied by the kernel itself (manual DMA): counted once")
            continue
        if not grid:
            total += block_bytes
            continue
        if n_prefetch and prefetch is None:
            total += steps * block_bytes
            exact = False
            continue
        closed = discharge_state(bm.index_map_jaxpr)
        n_idx = len(bm.index_map_jaxpr.out_avals)

        def index_at(*ids: Any, closed: Any = closed, n_idx: int = n_idx) -> Any:
            return core.eval_jaxpr(closed.jaxpr, closed.consts, *ids, *(prefetch or []))[:n_idx]

        indices = jax.vmap(index_at)(*points)
        stacked = np.stack([np.asarray(i).reshape(-1) for i in indices], axis=1) if indices else None
        fetches = 1 if stacked is None else 1 + int(np.any(np.diff(stacked, axis=0) != 0, axis=1).sum())
        total += fetches * block_bytes
    return Traffic(bytes=total, steps=steps, exact=exact, note="; ".join(notes))


@dataclass
class KernelWork:
    """Matmul FLOPs the kernels' grids run, by operand dtype, one pallas_call at a time.

    A pallas_call with a `pl.CostEstimate` counts its author's figure (`estimated_calls`); any other is
    counted from its body's matmuls times its grid steps (`counted_calls`). `flops` maps a matmul operand
    dtype name to FLOPs. A counted body's conditional blocks (`pl.when`) are counted as taken and a `while`
    body once, so with either the count is an upper bound (`upper_bound`); a counted call whose grid size
    depends on runtime values cannot be counted at all (`uncounted`, and `dynamic_grid` for any call).
    """

    flops: dict[str, float] = field(default_factory=dict)
    steps: int = 0
    dynamic_grid: bool = False
    upper_bound: bool = False
    estimated_calls: int = 0
    counted_calls: int = 0
    uncounted: int = 0

    @property
    def total(self) -> float:
        return float(sum(self.flops.values()))

    def dominant_dtype(self) -> str | None:
        return max(self.flops, key=lambda k: self.flops[k]) if self.flops else None

    def _add(self, dtype: str, flops: float) -> None:
        self.flops[dtype] = self.flops.get(dtype, 0.0) + flops


def kernel_work(closed_jaxpr: Any) -> KernelWork:
    """Count the matmul work inside every pallas_call of a traced kernel (see `KernelWork`)."""
    result = KernelWork()
    for eqn in pallas_call_eqns(closed_jaxpr):
        info = describe(eqn)
        per_step: dict[str, float] = {}
        flags = {"upper": False}
        _body_flops(eqn.params["jaxpr"], 1.0, per_step, flags)
        if info.steps < 0:
            result.dynamic_grid = True
        else:
            result.steps += info.steps
        if info.cost_flops is not None:
            result.estimated_calls += 1
            dtype = max(per_step, key=lambda k: per_step[k]) if per_step else _first_input_dtype(eqn)
            result._add(dtype, info.cost_flops)
            continue
        if info.steps < 0:
            result.uncounted += 1
            continue
        result.counted_calls += 1
        result.upper_bound |= flags["upper"]
        for dtype, flops in per_step.items():
            result._add(dtype, flops * info.steps)
    return result


def _first_input_dtype(eqn: Any) -> str:
    for var in eqn.invars:
        dtype = getattr(var.aval, "dtype", None)
        if dtype is not None and np.issubdtype(dtype, np.floating):
            return np.dtype(dtype).name
    return "float32"


def _body_flops(jaxpr: Any, scale: float, sink: dict[str, float], flags: dict[str, bool]) -> None:
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval
            contracted = math.prod(lhs.shape[d] for d in lhs_contract)
            dtype = np.dtype(lhs.dtype).name
            sink[dtype] = sink.get(dtype, 0.0) + scale * 2.0 * _size(eqn.outvars[0].aval) * contracted
            continue
        subs = _sub_jaxprs(eqn)
        if not subs:
            continue
        if name == "cond":
            branches: list[dict[str, float]] = []
            for sub in subs:
                branch: dict[str, float] = {}
                _body_flops(sub, scale, branch, flags)
                branches.append(branch)
            totals = [sum(b.values()) for b in branches]
            # only a branch that skips matmul work makes the count an upper bound (pl.when around an
            # accumulator's init or store does not)
            flags["upper"] |= bool(totals) and max(totals) > min(totals)
            biggest = max(branches, key=lambda b: sum(b.values()), default={})
            for dtype, flops in biggest.items():
                sink[dtype] = sink.get(dtype, 0.0) + flops
            continue
        factor = float(eqn.params.get("length", 1)) if name == "scan" else 1.0
        inner: dict[str, float] = {}
        for sub in subs:
            _body_flops(sub, scale * factor, inner, flags)
        if name == "while" and inner:
            flags["upper"] = True  # a while body with matmuls is counted once
        for dtype, flops in inner.items():
            sink[dtype] = sink.get(dtype, 0.0) + flops


@dataclass
class RefRead:
    """A read in a kernel body: which of the kernel's own ref parameters, where in the source."""

    name: str
    index: int
    memory_space: str
    shape: tuple[int, ...]
    file: str
    line: int


def ref_reads_at(fn: Any, args: tuple[Any, ...], file: str, line: int) -> list[RefRead]:
    """The kernel ref parameters read (`get`) at `file:line` in any pallas_call body of `fn(*args)`.

    The body's parameter names come from the traced kernel function itself (wherever it is defined), and
    each read is followed back through `pl.when`/loops/calls to the parameter it reads, so two operands of
    the same shape are told apart.
    """
    import jax
    from jax._src import source_info_util

    found: list[RefRead] = []
    target = str(file)
    for eqn in pallas_call_eqns(jax.make_jaxpr(fn)(*args)):
        body = eqn.params["jaxpr"]
        names = list(getattr(body.debug_info, "arg_names", None) or [])
        origin = {var: i for i, var in enumerate(body.invars)}

        def walk(jaxpr: Any, origin: dict[Any, int], names: list[str] = names, body: Any = body) -> None:
            for inner in jaxpr.eqns:
                if inner.primitive.name in ("get", "load") and inner.invars and inner.invars[0] in origin:
                    frame = source_info_util.user_frame(inner.source_info.traceback)
                    if frame is not None and frame.start_line == line and _same_file(frame.file_name, target):
                        index = origin[inner.invars[0]]
                        aval = body.invars[index].aval
                        name = names[index] if index < len(names) and names[index] else f"ref {index}"
                        read = RefRead(
                            name=name,
                            index=index,
                            memory_space=_space_name(getattr(aval, "memory_space", "")),
                            shape=tuple(int(d) for d in getattr(aval, "shape", ())),
                            file=frame.file_name,
                            line=line,
                        )
                        if all(r.index != read.index for r in found):
                            found.append(read)
                for sub, mapping in _sub_mappings(inner, origin):
                    walk(sub, mapping)

        walk(body, origin)
    return found


def _same_file(a: str, b: str) -> bool:
    from pathlib import Path

    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _sub_mappings(eqn: Any, origin: dict[Any, int]) -> list[tuple[Any, dict[Any, int]]]:
    """Each sub-jaxpr of `eqn` with its invars mapped to the kernel parameters the operands come from."""
    out = []
    name = eqn.primitive.name
    for sub in _sub_jaxprs(eqn):
        operands = list(eqn.invars)
        if name == "cond":
            operands = operands[1:]
        elif name == "while":
            cond_n = int(eqn.params.get("cond_nconsts", 0))
            body_n = int(eqn.params.get("body_nconsts", 0))
            carry = operands[cond_n + body_n :]
            if len(sub.invars) == body_n + len(carry):
                operands = operands[cond_n : cond_n + body_n] + carry
            else:
                operands = operands[:cond_n] + carry
        offset = len(sub.invars) - len(operands)
        mapping = {}
        for i, var in enumerate(operands):
            if var in origin and 0 <= i + offset < len(sub.invars):
                mapping[sub.invars[i + offset]] = origin[var]
        out.append((sub, mapping))
    return out
