"""TPU matmul precision emulated on CPU, and a per-layer error table against a float64 reference.

Neither XLA:CPU nor eager torch on CPU honours matmul-precision settings, so a CPU run says nothing about
how a model behaves on a TPU. What does reproduce the TPU is the arithmetic of its matrix unit: at
precision DEFAULT an f32 matmul or convolution multiplies operands rounded to bfloat16 and accumulates in
f32; at HIGH it uses three bf16 passes (bf16x3); at HIGHEST it is full f32. `EmulatedMatmulPrecision`
applies that rounding to the ATen matmul/convolution/attention ops a model runs, and `compare_layers`
reports, module by module, how far each precision lands from a float64 run of the same weights and inputs.
"""

from __future__ import annotations

import contextlib
import copy
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch

from tpu_runtime.onboard.dispatch_mode import OpDispatchMode
from tpu_runtime.onboard.noise import NoiseTape
from tpu_runtime.onboard.report import DEVICE_CHECK_NOT_RUN, LayerError, NumericsReport, PrecisionMode

__all__ = [
    "DEVICE_CHECK_NOT_RUN",
    "ROOT_NAME",
    "TOLERANCES",
    "Bf16MatmulOnF32",
    "EmulatedMatmulPrecision",
    "MatmulPrecision",
    "compare_layers",
    "emulated_precision",
    "split_bf16",
]

MatmulPrecision = Literal["default", "high", "highest"]
"""The f32 matmul precisions XLA:TPU offers; "bf16" (the whole model cast) needs no dispatch mode."""

ROOT_NAME = "(model)"
"""Row name of the root module, whose `named_modules()` name is the empty string."""


_BF16_ULP = 2.0**-8  # spacing of bfloat16 numbers in [1, 2): 8 significand bits with the implicit one

TOLERANCES: dict[PrecisionMode, float] = {
    "highest": 1e-4,
    "high": 1e-3,
    "default": 8 * _BF16_ULP,
    "bf16": 32 * _BF16_ULP,
}
"""Bound on `rel` (max |err| / max |reference|) per mode.

The unit of each bound is the rounding step of what the mode keeps, times a margin for the error that
grows through a stack of layers (dot products of a few hundred terms, a dozen blocks, softmax and
normalisation that amplify their input error a few times):

- highest: plain f32; one f32 step is 1.2e-7, and 1e-4 (about 800 steps) leaves room for long
  reductions and deep stacks while still catching anything that loses a bf16-sized amount.
- high: bf16x3 keeps about 16 significand bits per operand (error near 2**-17 per product); 1e-3 is a
  generous margin over that and 30x tighter than DEFAULT, so a layer that only HIGH rescues shows.
- default: operands rounded to bf16 (at most half a step, 2**-9, each); errors of a healthy model land
  at 0.5-2 bf16 steps (GPT-2-style blocks, MLPs, convnets measured here), so 8 steps (3.1e-2) passes
  well-conditioned layers and flags cancellation and overflow-prone layers, whose error is of the
  order of the output itself.
- bf16: weights, activations and elementwise math all in bf16, which measures 1.5-5x DEFAULT's error,
  so the bound is 4x DEFAULT's (32 steps, 0.125).
"""

_TINY = 1e-30  # denominator floor for `rel` when the reference output is all zeros


def split_bf16(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Split f32 `t` into bf16-representable `hi + lo` (returned as f32), the operand split of bf16x3."""
    hi = t.to(torch.bfloat16).to(t.dtype)
    lo = (t - hi).to(torch.bfloat16).to(t.dtype)
    return hi, lo


def _round_bf16(t: torch.Tensor) -> torch.Tensor:
    """Round to the nearest bfloat16 (ties to even, as the TPU does) and come back to the tensor's dtype."""
    return t.to(torch.bfloat16).to(t.dtype)


def _emulated_product(
    full: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    cross: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    a: torch.Tensor,
    b: torch.Tensor,
    precision: MatmulPrecision,
) -> torch.Tensor:
    """Run a bilinear op as the TPU matrix unit would.

    `full(x, y)` is the original op (bias, alpha, beta included); `cross(x, y)` is its bilinear part only,
    used for the two extra bf16x3 passes so that the bias is added once.
    """
    if precision == "default":
        return full(_round_bf16(a), _round_bf16(b))
    a_hi, a_lo = split_bf16(a)
    b_hi, b_lo = split_bf16(b)
    # Small terms first, then the big one: the order a bf16x3 accumulation uses.
    return (cross(a_hi, b_lo) + cross(a_lo, b_hi)) + full(a_hi, b_hi)


def _scaled(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], alpha: Any) -> Any:
    """`alpha * fn(x, y)` without the extra multiply when alpha is 1 (addmm and friends' alpha)."""
    if alpha == 1:
        return fn
    return lambda x, y: fn(x, y) * alpha


def _addbmm_cross(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Bilinear part of addbmm: the batched products summed over the batch."""
    return torch.bmm(x, y).sum(0)


def _emulated_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    is_causal: bool,
    attn_mask: torch.Tensor | None,
    scale: float | None,
    precision: MatmulPrecision,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention written out with emulated matmuls, for CPU's fused sdpa kernel.

    `F.scaled_dot_product_attention` on CPU reaches the dispatcher as one fused op
    (`_scaled_dot_product_flash_attention_for_cpu`), whose two matmuls would otherwise run in plain f32.
    The query is scaled before QK^T (as TPU attention kernels do); softmax stays in f32, and the
    probabilities are rounded like any other matmul operand before P @ V.
    """

    def mm(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return _emulated_product(torch.matmul, torch.matmul, x, y, precision)

    n_heads, kv_heads = query.shape[1], key.shape[1]
    if kv_heads != n_heads:  # grouped-query attention: each kv head serves a run of query heads
        key = key.repeat_interleave(n_heads // kv_heads, dim=1)
        value = value.repeat_interleave(n_heads // kv_heads, dim=1)
    factor = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = mm(query * factor, key.transpose(-2, -1))
    if is_causal:
        causal = torch.ones(scores.shape[-2], scores.shape[-1], dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
    if attn_mask is not None:  # additive: sdpa turns a boolean mask into -inf/0 before this op
        scores = scores + attn_mask
    logsumexp = torch.logsumexp(scores, dim=-1)
    probs = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # fully masked rows give zeros, not NaN
    out = mm(probs, value)
    return out.contiguous(), logsumexp  # contiguous (N, H, L, E), as the fused kernel returns it


aten = torch.ops.aten

# op -> (positions of the two matmul operands, builder of the bilinear part given the op's kwargs)
_BILINEAR_OPS: dict[Any, tuple[int, int, Callable[[Sequence[Any], Mapping[str, Any]], Any]]] = {
    aten.mm.default: (0, 1, lambda a, k: aten.mm.default),
    aten.bmm.default: (0, 1, lambda a, k: aten.bmm.default),
    aten.mv.default: (0, 1, lambda a, k: aten.mv.default),
    aten.dot.default: (0, 1, lambda a, k: aten.dot.default),
    aten.addmm.default: (1, 2, lambda a, k: _scaled(aten.mm.default, k.get("alpha", 1))),
    aten.baddbmm.default: (1, 2, lambda a, k: _scaled(aten.bmm.default, k.get("alpha", 1))),
    aten.addmv.default: (1, 2, lambda a, k: _scaled(aten.mv.default, k.get("alpha", 1))),
    aten.addbmm.default: (1, 2, lambda a, k: _scaled(_addbmm_cross, k.get("alpha", 1))),
    aten.convolution.default: (
        0,
        1,
        lambda a, k: lambda x, y: aten.convolution.default(x, y, None, *a[3:]),
    ),
}
_SDPA_CPU = aten._scaled_dot_product_flash_attention_for_cpu.default


class EmulatedMatmulPrecision(OpDispatchMode):
    """Run f32 matmuls, convolutions and CPU sdpa the way a TPU does at the given matmul precision.

    "default" rounds both operands to bf16 and accumulates in f32; "high" is bf16x3 (hi*hi + hi*lo +
    lo*hi, each operand split into two bf16 parts); "highest" leaves everything in f32. Only ops whose
    operands are both float32 are changed: bf16 and float64 work passes through untouched. `emulated`
    counts the ops that were rewritten, so a caller can tell that the emulation really applied.
    """

    def __init__(self, precision: MatmulPrecision = "default") -> None:
        if precision not in ("default", "high", "highest"):
            raise ValueError(
                f"matmul precision must be 'default', 'high' or 'highest', not {precision!r} "
                "(for 'bf16' cast the model and inputs to torch.bfloat16 instead)"
            )
        super().__init__()
        self.precision: MatmulPrecision = precision
        self.emulated: Counter[str] = Counter()

    def on_op(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if self.precision == "highest":
            return func(*args, **kwargs)
        entry = _BILINEAR_OPS.get(func)
        if entry is not None:
            i, j, make_cross = entry
            a, b = args[i], args[j]
            if _both(a, b, torch.float32):
                self.emulated[str(func)] += 1

                def full(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                    new_args = list(args)
                    new_args[i], new_args[j] = x, y
                    return func(*new_args, **kwargs)

                return _emulated_product(full, make_cross(args, kwargs), a, b, self.precision)
        elif func is _SDPA_CPU:
            return self._attention(func, args, kwargs)
        return func(*args, **kwargs)

    def _attention(self, func: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Emulate CPU's fused sdpa unless it uses dropout (only training does; left as it is)."""
        query, key, value = args[0], args[1], args[2]
        dropout_p = args[3] if len(args) > 3 else kwargs.get("dropout_p", 0.0)
        is_causal = bool(args[4] if len(args) > 4 else kwargs.get("is_causal", False))
        if dropout_p or not (_both(query, key, torch.float32) and _both(query, value, torch.float32)):
            return func(*args, **kwargs)
        self.emulated[str(func)] += 1
        return _emulated_attention(
            query, key, value, is_causal, kwargs.get("attn_mask"), kwargs.get("scale"), self.precision
        )


class Bf16MatmulOnF32(OpDispatchMode):
    """Run bf16 matmuls and convolutions as f32 products of the bf16 operands, rounded to bf16 once.

    That is a TPU's bf16 matmul (bf16 operands, f32 accumulation, a bf16 result) and what torch's CPU
    bf16 kernels compute too, but CPUs without native bf16 matrix units run those kernels on a slow
    generic path: GPT-2's 50,257-word head took 4.4 s in bf16 against 0.1 s in f32 (2 cores). Only the
    sum's order can differ, below a bf16 step. Elementwise ops stay in bf16.
    """

    def on_op(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        entry = _BILINEAR_OPS.get(func)
        if entry is None or not _both(args[entry[0]], args[entry[1]], torch.bfloat16):
            return func(*args, **kwargs)
        wide = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 else a for a in args]
        return func(*wide, **kwargs).to(torch.bfloat16)


def _both(a: Any, b: Any, dtype: torch.dtype) -> bool:
    """Both operands are tensors of `dtype` (the only products the modes here change)."""
    return all(isinstance(t, torch.Tensor) and t.dtype == dtype for t in (a, b))


@contextlib.contextmanager
def emulated_precision(precision: MatmulPrecision) -> Iterator[EmulatedMatmulPrecision]:
    """`with emulated_precision("default") as mode:` runs the block at TPU matmul precision on CPU."""
    with EmulatedMatmulPrecision(precision) as mode:
        yield mode


# ---------------------------------------------------------------------------------------------------
# Per-layer comparison


def _float_tensors(obj: Any, out: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Floating-point tensors inside a module output, in a stable order.

    Handles tensors, tuples/lists, dicts and Hugging Face `ModelOutput` (an OrderedDict subclass whose
    unset fields are absent). Other objects (caches, strings) are skipped: the tensors they hold were
    already compared at the layers that produced them.
    """
    if out is None:
        out = []
    if isinstance(obj, torch.Tensor):
        if obj.is_complex():
            out.append(torch.view_as_real(obj))
        elif obj.is_floating_point():
            out.append(obj)
    elif isinstance(obj, Mapping):
        for value in obj.values():
            _float_tensors(value, out)
    elif isinstance(obj, list | tuple):
        for value in obj:
            _float_tensors(value, out)
    return out


def _cast(obj: Any, dtype: torch.dtype) -> Any:
    """Cast the floating-point tensors of an input structure to `dtype` on CPU; token ids stay integers."""
    if isinstance(obj, torch.Tensor):
        obj = obj.detach().to("cpu")
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, Mapping):
        return {k: _cast(v, dtype) for k, v in obj.items()}
    if isinstance(obj, tuple):
        return tuple(_cast(v, dtype) for v in obj)
    if isinstance(obj, list):
        return [_cast(v, dtype) for v in obj]
    return obj


def _call(model: torch.nn.Module, inputs: Any) -> Any:
    """A dict is keyword arguments, a tuple or list positional arguments, anything else the one argument."""
    if isinstance(inputs, Mapping):
        return model(**inputs)
    if isinstance(inputs, tuple | list):
        return model(*inputs)
    return model(inputs)


@dataclass
class _Stats:
    max_abs: float
    rel: float
    cosine: float
    finite: bool


@dataclass
class _Reference:
    """One module's float64 outputs, with the reductions of them that every mode's comparison needs."""

    tensors: list[torch.Tensor]
    finite: bool
    abs_max: float
    sq: float

    @classmethod
    def of(cls, tensors: list[torch.Tensor]) -> _Reference:
        """Reduced once here rather than once per precision mode (the same float64 sums, same order)."""
        finite, abs_max, sq = True, 0.0, 0.0
        for r in tensors:
            if r.numel() == 0:
                continue
            finite = finite and bool(torch.isfinite(r).all())
            abs_max = max(abs_max, float(r.abs().max()))
            sq += float((r * r).sum())
        return cls(tensors, finite, abs_max, sq)


def _compare(outs: list[torch.Tensor], ref: _Reference) -> _Stats:
    """Error of one layer's outputs against its float64 reference, all arithmetic in float64."""
    refs = ref.tensors
    if len(outs) != len(refs) or any(o.shape != r.shape for o, r in zip(outs, refs, strict=False)):
        return _Stats(math.inf, math.inf, math.nan, False)
    max_abs = dot = out_sq = 0.0
    ref_max, ref_sq = ref.abs_max, ref.sq
    finite = ref.finite
    for o, r in zip(outs, refs, strict=True):
        if r.numel() == 0:
            continue
        o64 = o.detach().to(torch.float64)
        finite = finite and bool(torch.isfinite(o64).all())
        max_abs = max(max_abs, float((o64 - r).abs().max()))
        dot += float((o64 * r).sum())
        out_sq += float((o64 * o64).sum())
    if not finite:
        return _Stats(max_abs if math.isfinite(max_abs) else math.inf, math.nan, math.nan, False)
    if out_sq == 0.0 and ref_sq == 0.0:
        cosine = 1.0
    elif out_sq == 0.0 or ref_sq == 0.0:
        cosine = 0.0
    else:
        cosine = max(-1.0, min(1.0, dot / math.sqrt(out_sq * ref_sq)))
    return _Stats(max_abs, max_abs / max(ref_max, _TINY), cosine, True)


def _same(outs: list[torch.Tensor], refs: list[torch.Tensor]) -> bool:
    if len(outs) != len(refs):
        return False
    return all(
        o.shape == r.shape and torch.allclose(o.detach().to(torch.float64), r, rtol=0, atol=0, equal_nan=True)
        for o, r in zip(outs, refs, strict=True)
    )


def _run(
    model: torch.nn.Module,
    inputs: Any,
    dtype: torch.dtype,
    precision: MatmulPrecision | None,
    on_output: Callable[[str, Any], None],
    noise: NoiseTape | None = None,
) -> None:
    """Run a deep copy of `model` in `dtype`, calling `on_output(name, output)` once per module.

    The copy keeps the caller's model untouched (dtype, hooks, training flag). Random ops inside
    forward draw from a forked generator seeded the same way in every run, so runs stay comparable
    without touching the global RNG.
    """
    work = copy.deepcopy(model).to(device="cpu", dtype=dtype).eval()
    seen: set[str] = set()
    handles = []

    def make_hook(name: str) -> Callable[[torch.nn.Module, Any, Any], None]:
        def hook(_module: torch.nn.Module, _args: Any, output: Any) -> None:
            if name not in seen:  # a module called several times is compared at its first call
                seen.add(name)
                on_output(name, output)

        return hook

    try:
        for name, module in work.named_modules():
            handles.append(module.register_forward_hook(make_hook(name or ROOT_NAME)))
        mode: Any = contextlib.nullcontext()
        if precision:
            mode = EmulatedMatmulPrecision(precision)
        elif dtype == torch.bfloat16:
            mode = Bf16MatmulOnF32()
        tape = noise if noise is not None else contextlib.nullcontext()
        with torch.no_grad(), torch.random.fork_rng(devices=[]), tape, mode:
            torch.manual_seed(0)
            _call(work, _cast(inputs, dtype))
    finally:
        for handle in handles:
            handle.remove()
        del work


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run the block on one intra-op thread.

    The comparison is thousands of small float64 reductions inside forward hooks; with OpenMP threads
    contending for busy cores each one waits on the others. Measured on 2 cores (a 4-layer GPT-2 at width
    256, four modes): 40-47 s with two threads at load average 6, 2.4-3.4 s with one.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@one_thread()
def compare_layers(
    model: torch.nn.Module,
    inputs: Any,
    modes: Sequence[PrecisionMode] = ("default", "high", "highest", "bf16"),
    *,
    max_layers: int | None = None,
    tolerances: Mapping[PrecisionMode, float] | None = None,
) -> NumericsReport:
    """Per-module error of each precision mode against a float64 CPU run of the same weights and inputs.

    `inputs` is a dict (keyword arguments), a tuple/list (positional arguments) or a single tensor;
    floating-point tensors are cast per run, integer ones (token ids, masks) are passed as they are.
    Every named module is hooked (the root as `ROOT_NAME`); rows follow the order in which modules
    *finish*, so the first failing row is the earliest computed output that went wrong rather than a
    container that merely wraps it. A module called several times is compared at its first call.
    The reference keeps each module's output in float64 until the modes have run; `max_layers` caps
    how many modules (plus the root) are kept, for models too large for that. The caller's model is
    never modified: every run works on a deep copy, in eval mode under `torch.no_grad()`.
    """
    bounds: dict[PrecisionMode, float] = {**TOLERANCES, **(tolerances or {})}
    reference: dict[str, _Reference] = {}
    order: list[str] = []
    skipped: list[str] = []

    def keep_reference(name: str, output: Any) -> None:
        tensors = _float_tensors(output)
        if not tensors:
            return
        if max_layers is not None and len(order) >= max_layers and name != ROOT_NAME:
            skipped.append(name)
            return
        order.append(name)
        # Cloned: a later in-place op (ReLU(inplace=True), `x += ...`) must not rewrite what was seen.
        reference[name] = _Reference.of([t.detach().to(torch.float64).clone() for t in tensors])

    note = "float64 on CPU, same weights and inputs"
    record = NoiseTape("record")
    nondeterministic: set[str] = set()

    def check_again(name: str, output: Any) -> None:
        if name in reference and not _same(_float_tensors(output), reference[name].tensors):
            nondeterministic.add(name)

    try:
        _run(model, inputs, torch.float64, None, keep_reference, record)
        # the same run again, with the same samples: what still differs is randomness we cannot replay
        _run(model, inputs, torch.float64, None, check_again, NoiseTape("replay", record.tape))
    except Exception as exc:  # the user's model can fail in any way; say so in the report
        return NumericsReport(
            reference=note,
            modes=list(modes),
            rows=[],
            first_divergent_layer=None,
            first_divergent_by_mode={m: None for m in modes},
            device_check=DEVICE_CHECK_NOT_RUN,
            error=f"float64 reference run failed: {type(exc).__name__}: {exc}",
        )
    if skipped:
        note += f"; max_layers={max_layers}: compared the first {len(order)} modules, skipped {len(skipped)}"
    if record.drawn:
        drawn = ", ".join(f"aten::{op.split('::')[-1]} x{n}" for op, n in sorted(record.drawn.items()))
        note += f"; the model draws random numbers ({drawn}): every run replays the float64 run's samples"
    if nondeterministic:
        note += (
            f"; {len(nondeterministic)} modules differ between two float64 runs given the same samples "
            "(randomness outside torch's generator): marked nondeterministic, not judged"
        )

    stats: dict[str, dict[str, _Stats]] = {}
    errors: list[str] = []
    for mode in modes:
        found: dict[str, _Stats] = {}

        def measure(name: str, output: Any, found: dict[str, _Stats] = found) -> None:
            if name in reference:
                found[name] = _compare(_float_tensors(output), reference[name])

        dtype = torch.bfloat16 if mode == "bf16" else torch.float32
        precision: MatmulPrecision | None = None if mode == "bf16" else mode
        replay = NoiseTape("replay", record.tape)
        try:
            _run(model, inputs, dtype, precision, measure, replay)
        except Exception as exc:
            errors.append(f"{mode} run failed: {type(exc).__name__}: {exc}")
        if replay.mismatch:
            note += f"; {mode}: {replay.mismatch}, so its later samples are its own"
        stats[mode] = found
    reference.clear()

    rows: list[LayerError] = []
    first_by_mode: dict[str, str | None] = {m: None for m in modes}
    for name in order:
        for mode in modes:
            s = stats[mode].get(name, _Stats(math.inf, math.inf, math.nan, False))  # did not run
            unjudged = name in nondeterministic
            ok = unjudged or (s.finite and not math.isnan(s.cosine) and s.rel <= bounds[mode])
            rows.append(
                LayerError(
                    layer=name,
                    mode=mode,
                    max_abs=s.max_abs,
                    rel=s.rel,
                    cosine=s.cosine,
                    tolerance=bounds[mode],
                    ok=ok,
                    nondeterministic=unjudged,
                )
            )
            if not ok and first_by_mode[mode] is None:
                first_by_mode[mode] = name
    return NumericsReport(
        reference=note,
        modes=list(modes),
        rows=rows,
        first_divergent_layer=first_by_mode.get("default"),
        first_divergent_by_mode=first_by_mode,
        device_check=DEVICE_CHECK_NOT_RUN,
        error="; ".join(errors) or None,
    )
