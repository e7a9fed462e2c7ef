"""Stage 1: run the kernel in TPU interpret mode on fresh random inputs and compare with its reference.

For every (shape, dtype): inputs come from the module's `make_inputs` with a freshly seeded generator;
the reference runs on float64 copies of the floating inputs (JAX's x64 mode), so the comparison is against
a higher-precision answer; the kernel runs under `pltpu.InterpretParams(detect_races=True)` with its
output blocks poisoned (`tpu_runtime.kernels.poison`) and out-of-bounds reads raising. The verdict of a
case names the first thing wrong: an exception (out-of-bounds read with the offending ref and index), a
data race, the output's structure, shape or dtype, elements never written, NaN/Inf the reference does not
have, or values beyond the dtype's tolerance: |out - ref| <= atol * RMS(ref) + rtol * |ref|.

A kernel that declares a MESH (`tpu_runtime.kernels.mesh`) runs on that many host devices, once in each of
the interpreter's DMA models, as jax's own distributed interpret tests do: "on_wait" (a DMA's read and write
happen only when some core waits on its semaphore, as late and in whatever order the waits allow) and
"eager" (a DMA completes when it is issued). A kernel right in both passes; wrong in eager mode (or leaving
a semaphore non-zero at kernel exit) fails; right in eager mode but not in on_wait mode gets a warning:
the kernel depends on DMAs completing in issue order, which real hardware usually but not always gives
(see `ORDERING_NOTE`).
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tpu_runtime.deferred_imports import deferred_imports
from tpu_runtime.kernels.convention import KernelModule
from tpu_runtime.kernels.explain import (
    DescribeRef,
    Explained,
    Location,
    explain_race,
    explain_runtime,
    first_line,
    user_location,
)
from tpu_runtime.kernels.poison import poisoned_outputs
from tpu_runtime.kernels.report import CaseResult, StageResult, stage_result

DmaMode = Literal["on_wait", "eager"]

#: jax's interpret-mode lowering imports the Mosaic GPU interpreter (and with it Mosaic GPU and the NVVM and
#: LLVM dialects: 0.24 s of CPU) only to test whether the interpret parameters are GPU ones; ours are TPU
#: `InterpretParams`, so it loads lazily and never runs (`tpu_runtime.deferred_imports`).
GPU_INTERPRETER = frozenset({"jax._src.pallas.mosaic_gpu.interpret.interpret_pallas_call"})

#: (rtol, atol as a fraction of the reference output's RMS), by output dtype.
DEFAULT_TOLERANCE: dict[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-9),
    "float32": (1e-4, 1e-4),
    "bfloat16": (2e-2, 2e-2),
    "float16": (5e-3, 5e-3),
    "float8_e4m3fn": (1.25e-1, 1.25e-1),
    "float8_e5m2": (2.5e-1, 2.5e-1),
}


#: Why "exact in eager mode, wrong or racy in on_wait mode" is a warning and not a failure or a pass.
ORDERING_NOTE = (
    "the kernel is exact when every DMA completes as it is issued (dma_execution_mode='eager'), and wrong "
    "or racy only when the interpreter completes DMAs as late and out of order as their semaphores allow "
    "(the default 'on_wait'). That is a dependence on DMA completion order, not a failure seen on hardware: "
    "usually two DMAs in flight at once that share a receive semaphore, which jax's distributed Pallas "
    "guide (docs/pallas/tpu/distributed) says can fail silently once devices drift apart; give each "
    "in-flight DMA its own semaphore, or wait for one before starting the next"
)

INTERPRET_LIMIT_NOTE = (
    "correctness is unknown, not failed: the stages after this one still run (lowering, compile, PyTorch), "
    "and a run on a TPU VM is the way to check the numbers"
)


@dataclass
class Captured:
    """Interpreter output produced while a kernel ran: exceptions the callback logger saw, stdout text."""

    logged: list[BaseException] = field(default_factory=list)
    stdout: str = ""


class _ExceptionLog(logging.Handler):
    def __init__(self, sink: list[BaseException]) -> None:
        super().__init__(logging.ERROR)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.sink.append(record.exc_info[1])


@contextlib.contextmanager
def capture() -> Iterator[Captured]:
    """Collect what the interpreter prints (race reports) and logs (callback failures), silently."""
    captured = Captured()
    logger = logging.getLogger("jax._src.callback")
    handler = _ExceptionLog(captured.logged)
    old_propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            yield captured
    finally:
        logger.removeHandler(handler)
        logger.propagate = old_propagate
        captured.stdout = buffer.getvalue()


@dataclass
class KernelRun:
    """The outcome of calling the kernel once in interpret mode."""

    outputs: list[Any] | None
    error: Explained | None
    race: Explained | None
    reference_calls: int
    stdout: str = ""
    semaphores_left: str = ""


@contextlib.contextmanager
def guard_reference(km: KernelModule) -> Iterator[list[int]]:
    """Count calls of the module-level `reference` while the kernel runs (the kernel must never call it)."""
    counter = [0]
    module: Any = km.module
    original = module.reference

    def guarded(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return original(*args, **kwargs)

    module.reference = guarded
    try:
        yield counter
    finally:
        module.reference = original


def reset_interpreter() -> None:
    """The interpreter keeps global state after an exception; clear it before the next run."""
    from jax.experimental.pallas import tpu as pltpu

    pltpu.reset_tpu_interpret_mode_state()


def races_found() -> bool:
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc

    state = getattr(ipc, "races", None)
    return bool(state is not None and state.races_found)


def run_kernel(
    km: KernelModule,
    params: dict[str, Any],
    inputs: tuple[Any, ...],
    *,
    poison: bool = True,
    uninitialized: Literal["nan", "zero"] = "nan",
    dma_mode: DmaMode = "on_wait",
) -> KernelRun:
    """Call the kernel once in TPU interpret mode with race detection; never raises for kernel errors.

    A kernel with a MESH runs with that mesh as JAX's current mesh (`mesh.current_mesh`)."""
    import jax
    from jax.experimental.pallas import tpu as pltpu

    from tpu_runtime.kernels.mesh import cpu_mesh, current_mesh

    interpret = pltpu.InterpretParams(
        detect_races=True, uninitialized_memory=uninitialized, dma_execution_mode=dma_mode
    )
    host_mesh = cpu_mesh(km.mesh) if km.mesh else None
    outputs: list[Any] | None = None
    error: Explained | None = None
    reset_interpreter()
    with capture() as captured, guard_reference(km) as calls:
        try:
            with (
                current_mesh(host_mesh),
                poisoned_outputs(poison),
                pltpu.force_tpu_interpret_mode(interpret),
                deferred_imports(GPU_INTERPRETER),
            ):
                result = km.kernel(*inputs, **params)
                result = jax.block_until_ready(result)
            outputs = [np.asarray(leaf) for leaf in jax.tree.leaves(result)]
        except Exception as exc:
            reset_interpreter()
            error = explain_runtime(exc, captured.logged, km.path, _ref_namer(km, params, inputs))
    race = None
    if "RACE DETECTED" in captured.stdout or (error is None and races_found()):
        race = explain_race(captured.stdout, km.path)
    left = _SEMAPHORE_LEFT.search(captured.stdout)
    return KernelRun(outputs, error, race, calls[0], captured.stdout, left.group(0) if left else "")


#: What the interpreter prints when a core ends its kernel with a semaphore still counting.
_SEMAPHORE_LEFT = re.compile(r"Semaphore \d+ has non-zero count for \d+ .*? at kernel exit: -?\d+")


def _ref_namer(km: KernelModule, params: dict[str, Any], inputs: tuple[Any, ...]) -> DescribeRef:
    """Names the kernel's own ref parameter read at a source location (see `introspect.ref_reads_at`)."""

    def describe(location: Location, space: str, shape: str) -> str | None:
        from tpu_runtime.kernels.introspect import ref_reads_at

        fn = functools.partial(km.kernel, **params)
        reads = ref_reads_at(fn, inputs, location.file, location.line)
        matching = [
            r
            for r in reads
            if r.memory_space == space
            and str(r.shape).replace(" ", "")
            in (shape.replace(" ", ""), shape.replace(" ", "").replace(",)", ")"))
        ]
        chosen = matching or [r for r in reads if r.memory_space == space] or reads
        if not chosen:
            return None
        memory = space.upper() if space in ("smem", "vmem", "hbm") else space
        names = " or ".join(f"`{r.name}`" for r in chosen)
        kinds = {
            ("scalar-prefetch " if r.memory_space == "smem" else "") + f"parameter {r.index}" for r in chosen
        }
        return f"{names} ({', '.join(sorted(kinds))} of the kernel body, {memory}, shape {shape})"

    return describe


def reference_outputs(km: KernelModule, inputs: tuple[Any, ...]) -> tuple[list[np.ndarray], str]:
    """The reference on float64 copies of the floating inputs; falls back to the inputs' own precision.

    The label says what the kernel is compared against: "float64", "exact integer" (integer outputs), or
    "input precision" when the reference cannot run in float64.
    """
    import jax
    import jax.numpy as jnp

    def upcast(x: Any) -> Any:
        # widened in numpy, exactly: `x.astype` would compile one XLA convert per input shape (0.25-0.4 s
        # each on 2 busy cores), and this runs for every case; `device_put` copies the result as it is,
        # where `jnp.asarray` would compile a staging computation for each new shape
        if not jnp.issubdtype(x.dtype, jnp.floating):
            return x
        return jax.device_put(np.asarray(x).astype(np.float64))

    def label(leaves: list[Any], wide: bool) -> str:
        integer = [jnp.issubdtype(leaf.dtype, jnp.integer) or leaf.dtype == jnp.bool_ for leaf in leaves]
        if leaves and all(integer):
            return "exact integer"
        return "float64" if wide else "input precision"

    try:
        with jax.enable_x64(True):
            wide = jax.tree.map(upcast, inputs)
            leaves = jax.tree.leaves(_jit_or_eager(km.reference, *wide))
            return [np.asarray(leaf).astype(np.float64) for leaf in leaves], label(leaves, True)
    except Exception:
        leaves = jax.tree.leaves(_jit_or_eager(km.reference, *inputs))
        return [np.asarray(leaf).astype(np.float64) for leaf in leaves], label(leaves, False)


def _jit_or_eager(fn: Callable[..., Any], *args: Any) -> Any:
    """One XLA compile for the whole function (much faster than op-by-op on CPU). A reference that cannot
    be traced (it branches on values, or loops over data-dependent sizes in Python, as grouped and ragged
    references do) runs eagerly on the concrete inputs instead; whatever tracing raised is not its verdict."""
    import jax

    try:
        traced = jax.jit(fn).trace(*args)
    except Exception:
        return fn(*args)
    return traced.lower().compile()(*args)


def reference_avals(km: KernelModule, inputs: tuple[Any, ...]) -> list[Any]:
    """Output shapes and dtypes of the reference at the inputs' own precision (eagerly when it cannot be
    traced)."""
    import jax

    try:
        return list(jax.tree.leaves(jax.eval_shape(km.reference, *inputs)))
    except Exception:
        result = km.reference(*inputs)
        return [jax.ShapeDtypeStruct(np.shape(x), x.dtype) for x in jax.tree.leaves(result)]


def rng_for(seed: int, *stream: int) -> np.random.Generator:
    """The generator handed to `make_inputs`: one independent stream per (seed, case)."""
    return np.random.default_rng([seed, *stream])


def make_case_inputs(
    km: KernelModule, rng: np.random.Generator, shape: dict[str, int], dtype: str
) -> tuple[Any, ...]:
    """`make_inputs`, normalised to a tuple of JAX arrays; raises ValueError for anything else."""
    import jax
    import jax.numpy as jnp

    made = km.make_inputs(rng, dict(shape), dtype)
    inputs = tuple(made) if isinstance(made, (tuple, list)) else (made,)
    for i, value in enumerate(inputs):
        if not isinstance(value, (jax.Array, np.ndarray)):
            raise ValueError(f"make_inputs returned {type(value).__name__} as input {i}; return arrays only")
    return tuple(jnp.asarray(value) for value in inputs)


def tolerance_for(km: KernelModule, dtype: Any) -> tuple[float, float]:
    name = np.dtype(dtype).name
    if name in km.tolerance:
        return km.tolerance[name]
    if np.issubdtype(np.dtype(dtype), np.integer) or np.dtype(dtype) == np.bool_:
        return (0.0, 0.0)
    return DEFAULT_TOLERANCE.get(name, (1e-4, 1e-4))


def _where(mask: np.ndarray) -> str:
    """Where the True elements of `mask` lie: a bounding box, and the first index."""
    idx = np.argwhere(mask)
    if idx.size == 0:
        return ""
    lo, hi = idx.min(axis=0), idx.max(axis=0)
    box = " x ".join(f"{a}..{b}" for a, b in zip(lo, hi, strict=True))
    return f"index range [{box}], first at {tuple(int(i) for i in idx[0])}"


@dataclass
class CaseOutcome:
    result: CaseResult
    reference_calls: int = 0
    detail: str = ""


def check_case(
    km: KernelModule,
    params: dict[str, Any],
    shape: dict[str, int],
    dtype: str,
    rng: np.random.Generator,
) -> CaseOutcome:
    """Run one (shape, dtype) case end to end and return its verdict."""
    start = time.perf_counter()

    def done(verdict: str, message: str, calls: int = 0, detail: str = "", **extra: Any) -> CaseOutcome:
        result = CaseResult(
            shape=dict(shape),
            dtype=dtype,
            verdict=verdict,  # type: ignore[arg-type]
            message=message,
            seconds=round(time.perf_counter() - start, 3),
            **extra,
        )
        return CaseOutcome(result, calls, detail)

    try:
        inputs = make_case_inputs(km, rng, shape, dtype)
    except Exception as exc:
        return done("fail", f"make_inputs raised {type(exc).__name__}: {first_line(exc)}")
    try:
        want, precision = reference_outputs(km, inputs)
        want_avals = reference_avals(km, inputs)
    except Exception as exc:
        where = user_location([exc])
        return done(
            "fail",
            f"the reference (not the kernel) raised {type(exc).__name__}: {first_line(exc)}"
            f"{where.render() if where else ''}; fix reference()",
        )
    case = _Case(km, params, inputs, want, want_avals, precision, done)
    if km.devices == 1:
        return _judge(case, run_kernel(km, params, inputs))
    return _judge_both_orderings(case)


_Done = Callable[..., CaseOutcome]


@dataclass(frozen=True)
class _Case:
    """One case with its reference computed: what judging any run of the kernel on it needs."""

    km: KernelModule
    params: dict[str, Any]
    inputs: tuple[Any, ...]
    want: list[np.ndarray]
    want_avals: list[Any]
    precision: str
    done: _Done


def _judge_both_orderings(case: _Case) -> CaseOutcome:
    """A multi-device kernel in both DMA models (see the module docstring); the case's verdict and why."""
    km, params, inputs, precision, done = case.km, case.params, case.inputs, case.precision, case.done
    late = _judge(case, run_kernel(km, params, inputs))
    eager = _judge(case, run_kernel(km, params, inputs, dma_mode="eager"), dma_mode="eager")
    late_result, eager_result = late.result, eager.result
    calls = late.reference_calls + eager.reference_calls
    if late_result.verdict == "skip" or eager_result.verdict == "skip":
        skipped = late if late_result.verdict == "skip" else eager
        return done("skip", skipped.result.message, calls, skipped.detail)
    if eager_result.verdict == "fail":
        also = (
            "; also wrong in on_wait mode"
            if late_result.verdict == "fail"
            else "; right in on_wait mode, so the result depends on when DMAs complete"
        )
        return done(
            "fail",
            f"in eager DMA mode (each DMA completes as issued): {eager_result.message}{also}",
            calls,
            eager.detail,
            **_errors(eager_result),
        )
    if late_result.verdict == "fail":
        return done(
            "warn",
            f"{ORDERING_NOTE}. In on_wait mode: {late_result.message}",
            calls,
            late.detail,
            **_errors(eager_result),
        )
    worst = max(late_result.max_scaled_error or 0.0, eager_result.max_scaled_error or 0.0)
    return done(
        "pass",
        f"matches the {precision} reference on {km.devices} devices in both DMA modes, on_wait and eager "
        f"(max scaled error {worst:.3g} of 1)",
        calls,
        max_abs_error=max(late_result.max_abs_error or 0.0, eager_result.max_abs_error or 0.0),
        max_scaled_error=worst,
        tolerance=eager_result.tolerance,
    )


def _errors(result: CaseResult) -> dict[str, Any]:
    return {
        "max_abs_error": result.max_abs_error,
        "max_scaled_error": result.max_scaled_error,
        "tolerance": result.tolerance,
    }


def _judge(case: _Case, run: KernelRun, dma_mode: DmaMode = "on_wait") -> CaseOutcome:
    """The verdict of one kernel run against the reference: the first thing wrong, or pass."""
    km, params, inputs, want, want_avals = case.km, case.params, case.inputs, case.want, case.want_avals
    precision, done = case.precision, case.done
    if run.error is not None:
        status = "skip" if run.error.kind == "interpreter" else "fail"
        return done(status, run.error.message, run.reference_calls, run.error.detail)
    if run.race is not None:
        return done("fail", run.race.message, run.reference_calls, run.race.detail)
    if run.semaphores_left and km.devices > 1:
        return done(
            "fail",
            f"the interpreter reports: {run.semaphores_left} (a DMA or signal nobody waited for: every "
            "started copy needs its .wait(), every semaphore_signal a matching semaphore_wait; on a TPU a "
            "semaphore left non-zero at kernel exit is an error)",
            run.reference_calls,
        )
    assert run.outputs is not None
    got = run.outputs
    if len(got) != len(want_avals):
        return done(
            "fail",
            f"the kernel returns {len(got)} array(s), the reference {len(want_avals)}",
            run.reference_calls,
        )
    worst_abs, worst_scaled = 0.0, 0.0
    tolerance_text = ""
    for i, (out, aval, ref) in enumerate(zip(got, want_avals, want, strict=True)):
        label = f"output {i}" if len(got) > 1 else "the output"
        if tuple(out.shape) != tuple(aval.shape):
            return done(
                "fail",
                f"{label} has shape {tuple(out.shape)}; the reference returns {tuple(aval.shape)}",
                run.reference_calls,
            )
        if np.dtype(out.dtype) != np.dtype(aval.dtype):
            return done(
                "fail",
                f"{label} has dtype {np.dtype(out.dtype).name}; "
                f"the reference returns {np.dtype(aval.dtype).name}",
                run.reference_calls,
            )
        verdict = _compare(km, out, ref, label, precision)
        if verdict.kind == "nonfinite":
            return done(
                "fail", _classify_nonfinite(km, params, inputs, i, verdict, dma_mode), run.reference_calls
            )
        if verdict.kind == "mismatch":
            return done(
                "fail",
                verdict.message,
                run.reference_calls,
                max_abs_error=verdict.max_abs,
                max_scaled_error=verdict.max_scaled,
                tolerance=verdict.tolerance,
            )
        worst_abs, worst_scaled = max(worst_abs, verdict.max_abs), max(worst_scaled, verdict.max_scaled)
        tolerance_text = verdict.tolerance
    return done(
        "pass",
        f"matches the {precision} reference (max scaled error {worst_scaled:.3g} of 1)",
        run.reference_calls,
        max_abs_error=worst_abs,
        max_scaled_error=worst_scaled,
        tolerance=tolerance_text,
    )


@dataclass
class _Comparison:
    kind: str
    message: str = ""
    max_abs: float = 0.0
    max_scaled: float = 0.0
    tolerance: str = ""
    bad_mask: Any = None


def _compare(
    km: KernelModule, out: np.ndarray, ref: np.ndarray, label: str, precision: str = ""
) -> _Comparison:
    got = out.astype(np.float64)
    rtol, atol_frac = tolerance_for(km, out.dtype)
    finite_ref = np.isfinite(ref)
    bad = ~np.isfinite(got) & finite_ref
    if bad.any():
        return _Comparison("nonfinite", bad_mask=bad, message=label)
    rms = float(np.sqrt(np.mean(np.square(ref[finite_ref])))) if finite_ref.any() else 0.0
    atol = atol_frac * (rms if rms > 0 else 1.0)
    err = np.where(finite_ref, np.abs(got - ref), 0.0)
    allowed = atol + rtol * np.abs(ref)
    scaled = np.where(
        allowed > 0, err / np.where(allowed > 0, allowed, 1.0), np.where(err > 0, math.inf, 0.0)
    )
    tolerance = f"rtol {rtol:g}, atol {atol_frac:g} x RMS(ref)" if rtol or atol_frac else "exact"
    max_abs = float(err.max()) if err.size else 0.0
    max_scaled = float(scaled.max()) if scaled.size else 0.0
    if max_scaled <= 1.0:
        return _Comparison("ok", max_abs=max_abs, max_scaled=max_scaled, tolerance=tolerance)
    wrong = scaled > 1.0
    worst = np.unravel_index(int(np.argmax(scaled)), scaled.shape) if scaled.ndim else ()
    count = int(wrong.sum())
    mean_abs = float(err.mean()) if err.size else 0.0
    suspect = (
        "race detector: a race was reported"
        if races_found()
        else "the race detector found no race in interpret mode (one core; a race that needs a second core "
        "or real DMA timing cannot show there)"
        if km.devices == 1
        else f"the race detector found no race in interpret mode ({km.devices} devices, one core each)"
    )
    message = (
        f"{label}: {count} of {wrong.size} elements ({count / max(wrong.size, 1):.1%}) differ beyond "
        f"tolerance ({tolerance}) from the {precision or 'float64'} reference; mean |error| "
        f"{mean_abs:.3g}, max |error| {max_abs:.3g} (max scaled {max_scaled:.3g} of 1); worst at "
        f"{tuple(int(i) for i in worst)}: kernel {got[worst]:.6g}, reference {ref[worst]:.6g}; "
        f"{_where(wrong)}; {suspect}"
    )
    return _Comparison("mismatch", message, max_abs, max_scaled, tolerance, wrong)


def _classify_nonfinite(
    km: KernelModule,
    params: dict[str, Any],
    inputs: tuple[Any, ...],
    index: int,
    verdict: _Comparison,
    dma_mode: DmaMode = "on_wait",
) -> str:
    """NaN/Inf where the reference is finite: never written (poison survived) or computed?

    Rerun without poison and with zero-filled fresh memory: elements that become finite were never written.
    """
    mask = verdict.bad_mask
    label = verdict.message
    total = int(mask.sum())
    rerun = run_kernel(km, params, inputs, poison=False, uninitialized="zero", dma_mode=dma_mode)
    if rerun.outputs is not None and index < len(rerun.outputs):
        second = np.asarray(rerun.outputs[index], np.float64)
        unwritten = mask & np.isfinite(second)
        if unwritten.any():
            count = int(unwritten.sum())
            return (
                f"{label}: {count} of {mask.size} elements were never written ({_where(unwritten)}); every "
                "output block the grid visits must be stored completely"
            )
    return (
        f"{label}: {total} of {mask.size} elements are NaN or Inf where the reference is finite "
        f"({_where(mask)})"
    )


def correctness_stage(
    km: KernelModule,
    params: dict[str, Any],
    shapes: list[dict[str, int]],
    dtypes: list[str],
    seed: int,
    progress: Callable[[float], None] | None = None,
) -> tuple[StageResult, int, list[str]]:
    """Every (shape, dtype) case; returns the stage, how often the kernel called the reference, and the
    tracebacks of failed cases."""
    start = time.perf_counter()
    cases: list[CaseResult] = []
    details: list[str] = []
    calls = 0
    combos = [(s, d) for s in shapes for d in dtypes]
    for n, (shape, dtype) in enumerate(combos):
        outcome = check_case(km, params, shape, dtype, rng_for(seed, n))
        cases.append(outcome.result)
        calls += outcome.reference_calls
        if outcome.detail:
            details.append(outcome.detail)
        if progress:
            progress((n + 1) / len(combos))
    failed = [c for c in cases if c.verdict == "fail"]
    unchecked = [c for c in cases if c.verdict == "skip"]
    warned = [c for c in cases if c.verdict == "warn"]
    verdict = "fail" if failed else ("skip" if unchecked else ("warn" if warned else "pass"))
    if failed:
        first = failed[0]
        message = f"{len(failed)} of {len(cases)} cases fail; {_case_label(first)}: {first.message}"
    elif unchecked:
        message = f"{len(unchecked)} of {len(cases)} cases {unchecked[0].message}; {INTERPRET_LIMIT_NOTE}"
    elif warned:
        message = f"{len(warned)} of {len(cases)} cases: {_case_label(warned[0])}: {warned[0].message}"
    else:
        message = f"all {len(cases)} cases match the reference ({len(shapes)} shapes x {len(dtypes)} dtypes)"
    stage = stage_result("correctness", verdict, message, started=start, cases=cases)  # type: ignore[arg-type]
    return stage, calls, details


def _case_label(case: CaseResult) -> str:
    dims = ", ".join(f"{k}={v}" for k, v in case.shape.items())
    return f"({dims}) {case.dtype}"
