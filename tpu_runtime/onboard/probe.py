"""The child-process half of onboarding: everything that executes the user's model.

Called through `tpu_runtime.sandbox.run_child("tpu_runtime.onboard.probe:run", payload)`; returns a
`ModelProbe` as JSON. Order matters: CPU capture and numerics run before torch_tpu is imported.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tpu_runtime.child_entry import peak_rss_bytes, report_progress
from tpu_runtime.errors import TpuAgentError
from tpu_runtime.onboard.capture_types import ActivationProbe, KVGeometry, ModelProbe, RawOp, SizePlan
from tpu_runtime.onboard.full_size import (
    block_boundaries,
    build_fake,
    forget_user_modules,
    one_line,
    parameter_stats,
    shapes,
    tensor_bytes,
)
from tpu_runtime.onboard.lm_detect import LMRecognition, recognise, structural_kv
from tpu_runtime.onboard.loader import LoadedModel, ModelLoadError, load_model
from tpu_runtime.onboard.op_capture import Capture, SourceLocator, capture_ops, tensor_leaves
from tpu_runtime.onboard.shrink import ShrinkResult, cut_stacks, repeated_stacks, shallow_copy
from tpu_runtime.onboard.small_copy import Budget, Measure, small_copy


class ProbeError(TpuAgentError):
    """A failure of the user's model that deserves its own one-line explanation."""

    def __init__(self, kind: str, one_line: str) -> None:
        super().__init__(one_line)
        self.failure_kind = kind
        self.one_line = one_line


def run(payload: dict[str, Any]) -> dict[str, Any]:
    """Build the model on fake tensors at full size; run it for real when it fits, else a smaller copy."""
    torch.manual_seed(int(payload.get("seed", 0)))
    timings: dict[str, float] = {}
    start = time.perf_counter()
    report_progress("load", 0.0)
    source = _Source(payload)
    fake, failure = build_fake(source.build, source.user_dirs)
    timings["fake_build"] = time.perf_counter() - start
    budget = Budget(memory_bytes=int(payload.get("memory_bytes") or _default_memory()))
    if fake is not None:
        measure = Measure.of(fake)
        if not budget.fits_real(measure):
            return _run_full_size_fake(payload, source, fake, measure, budget, timings)
    torch.manual_seed(int(payload.get("seed", 0)))
    build_note = None
    if failure is not None and source.hf_config:  # no user code to blame: never allocate a checkpoint
        raise ProbeError("bad_input", f"{source.name}: {failure.describe()}")
    if failure is not None:
        build_note = (
            f"{failure.describe()}, so the model was built for real; if that needs more memory than this "
            "machine has, pass --entry module:callable returning a smaller model and inputs"
        )
        report_progress("note: " + build_note, 0.02)
    t0 = time.perf_counter()
    if fake is not None:
        shrunk = _build_shrunk(payload, source, fake.model)
        if shrunk is not None:
            timings["load"] = time.perf_counter() - t0
            return _run_real(payload, source, shrunk[0], timings, None, full=fake.model, shrunk=shrunk[1])
        torch.manual_seed(int(payload.get("seed", 0)))
    try:
        loaded = source.build()
    except ModelLoadError as exc:
        raise ProbeError("bad_input", str(exc)) from exc
    except Exception as exc:
        raise ProbeError(
            "raised",
            f"loading {source.name} raised {one_line(exc)}",
        ) from exc
    timings["load"] = time.perf_counter() - t0
    return _run_real(payload, source, loaded, timings, build_note)


class _Source:
    """Where the model comes from: the user's file (one of the loader's conventions) or a HF config."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self.hf_config = payload.get("hf_config")
        self.batch, self.seq = payload.get("batch"), payload.get("seq")
        self.entry = payload.get("entry")
        self.weight_dtype = payload.get("weight_dtype")
        if self.hf_config:
            self.path = Path(self.hf_config).resolve()
            self.name = self.path.name
        else:
            self.path = Path(payload["model_file"]).resolve()
            self.name = self.path.name
        self.user_dirs = [self.path.parent if self.path.is_file() else self.path]

    def build(self, patch: Any = None) -> LoadedModel:
        if self.hf_config:
            from tpu_runtime.onboard import hf_config as hf

            try:
                config = hf.load_config(hf.read_config_dict(self.path))
            except hf.HFConfigError as exc:
                raise ModelLoadError(str(exc)) from exc
            dtype = hf.compute_dtype(config, self.weight_dtype)
            previous = torch.get_default_dtype()
            torch.set_default_dtype(dtype or previous)  # `.to()` cannot swap fake parameters
            try:
                model = hf.build_model(config)
            finally:
                torch.set_default_dtype(previous)
            inputs = hf.token_inputs(config, self.batch or 1, hf.default_seq(config, self.seq))
            return LoadedModel(
                model=model, args=(), kwargs=inputs, convention="--hf-config", input_style="keyword"
            )
        return load_model(self.path, self.entry, patch=patch)

    def rebuild(self) -> Any:
        """A loader that takes a module patch, for files; None for a HF config (shrunk by its config)."""
        return None if self.hf_config else (lambda patch: self.build(patch))


def _wants_shrink(payload: dict[str, Any], params: int) -> bool:
    mode = payload.get("shrink", "auto")
    return mode == "always" or (
        mode == "auto" and params > int(payload.get("shrink_above_params", 100_000_000))
    )


def _build_shrunk(
    payload: dict[str, Any], source: _Source, full: torch.nn.Module
) -> tuple[LoadedModel, ShrinkResult] | None:
    """The shallower copy built without the full model (`meta_build.py`): parameters on the meta device,
    stacks cut, then only the parameters left allocated and initialised. None when the copy would not be
    the one the full build gives (the caller builds the full model for real, as before), when no shrink is
    wanted, or when XLA compiles the full model from real weights."""
    params = parameter_stats(full)[0]
    if not _wants_shrink(payload, params) or _xla_generations(payload.get("xla", "auto"), params):
        return None
    if not repeated_stacks(full, 4):
        return None
    from tpu_runtime.onboard.meta_build import materialise, parameters_on_meta, refusal

    try:
        with forget_user_modules(source.user_dirs), parameters_on_meta() as watch:
            loaded = source.build()
    except Exception:  # the real build that follows reports the failure in the user's terms
        return None
    if refusal(loaded.model, watch) is not None:
        return None
    shrink, patch_layer_counts = cut_stacks(loaded.model)
    if materialise(loaded.model) is not None:
        return None
    patch_layer_counts()
    return loaded, shrink


def _default_memory() -> int:
    import psutil

    return int(psutil.virtual_memory().total * 0.75)


def _run_real(
    payload: dict[str, Any],
    source: _Source,
    loaded: LoadedModel,
    timings: dict[str, float],
    build_note: str | None,
    full: torch.nn.Module | None = None,
    shrunk: ShrinkResult | None = None,
) -> dict[str, Any]:
    """The model fits this machine: every stage runs on the model itself (a shallower copy if large).

    `full` and `shrunk`: `loaded` is already the shallower copy (`_build_shrunk`), and `full` the model
    at full size on fake tensors, which supplies the sizes, config and structure."""
    model = loaded.model
    params = sum(p.numel() for p in (full or model).parameters())
    want_shrink = _wants_shrink(payload, params)
    user_dirs = source.user_dirs
    report_progress("ops", 0.1)
    t0 = time.perf_counter()
    context = nullcontext(shrunk) if shrunk is not None else _maybe_shrink(model, want_shrink)
    with context as shrink:
        capture, output = _capture(model, loaded, user_dirs)
        outputs = _outputs(output)
        timings["ops"] = time.perf_counter() - t0
        numerics, numerics_error = _numerics_step(payload, model, loaded, timings)
        tpu_ops, tpu_note = _fake_tpu_step(payload, model, loaded, capture, user_dirs, timings)
        behaviour = recognise(model, loaded, output)
        shrink_note = shrink.describe() if shrink.lists else None
        depth = shrink.depth_ratio
    model = full or model

    xla: dict[str, dict[str, Any]] = {}
    xla_notes: list[str] = []
    generations = _xla_generations(payload.get("xla", "auto"), params)
    if generations:
        report_progress("xla", 0.9)
        t0 = time.perf_counter()
        xla, xla_notes = _xla(model, loaded, generations, payload.get("batch"), payload.get("seq"))
        timings["xla"] = time.perf_counter() - t0
    elif payload.get("xla", "auto") == "auto":
        xla_notes.append(
            f"XLA memory analysis skipped for a model of {params / 1e6:.0f}M parameters (compiling takes "
            "about 10 s per generation at GPT-2 size): ask for it with --xla v6e or --xla all"
        )
    size = SizePlan(
        full_size="real tensors",
        input_shapes=shapes((loaded.args, loaded.kwargs)),
        input_bytes=tensor_bytes((loaded.args, loaded.kwargs)),
        capture="the model itself on CPU" + (" (a shallower copy)" if shrink_note else ""),
        build_note=build_note,
    )
    probe = _new_probe(
        payload,
        model,
        loaded,
        behaviour,
        outputs,
        capture,
        tpu_ops,
        tpu_note,
        depth_ratio=depth,
        shrink_note=shrink_note,
        size=size,
        numerics=numerics,
        numerics_error=numerics_error,
        input_shapes_vary=_shapes_vary(loaded),
        xla=xla,
        xla_notes=xla_notes,
        timings=timings,
    )
    return _finished(probe)


def _run_full_size_fake(
    payload: dict[str, Any],
    source: _Source,
    fake: LoadedModel,
    measure: Measure,
    budget: Budget,
    timings: dict[str, float],
) -> dict[str, Any]:
    """Too big for this machine: ops, activations and sizes at full size on fake tensors; numerics (and
    ops that need real values) on a smaller real copy."""
    user_dirs = source.user_dirs
    report_progress("ops (full size, fake tensors)", 0.1)
    t0 = time.perf_counter()
    capture: Capture | None = None
    capture_error: str | None = None
    output: Any = None
    try:
        capture, output = capture_ops(fake.model, fake.args, fake.kwargs, user_dirs)
    except Exception as exc:  # an op that needs real values: the small copy supplies the inventory
        capture_error = one_line(exc)
    blocks, boundary = block_boundaries(fake.model, fake.args, fake.kwargs)
    timings["ops"] = time.perf_counter() - t0

    report_progress("smaller copy", 0.3)
    t0 = time.perf_counter()
    copy, tried = small_copy(fake, source.rebuild(), budget, user_dirs)
    timings["small_copy"] = time.perf_counter() - t0
    full_shapes = shapes((fake.args, fake.kwargs))
    size = SizePlan(
        full_size="fake tensors",
        input_shapes=full_shapes,
        input_bytes=measure.input_bytes,
        forward_flops=measure.flops,
        remat_blocks=blocks,
        remat_block_input_bytes=boundary,
    )
    why = (
        f"{measure.weight_bytes / 2**30:.1f} GiB of weights and {measure.input_bytes / 2**30:.1f} GiB of "
        f"inputs, {measure.flops or 0:.2g} FLOPs per forward, against a budget of "
        f"{budget.memory_bytes / 2**30:.1f} GiB (--memory-gb)"
    )
    notes = [f"built at full size on fake tensors (shapes and dtypes only, no memory): {why}"]
    if capture is not None:
        size.capture = "full size on fake tensors, forward and backward"
    elif copy is not None:
        report_progress("ops (smaller copy)", 0.4)
        capture, output = _capture(copy.loaded.model, copy.loaded, user_dirs)
        size.capture = (
            f"the smaller copy, because the full-size forward needs real values ({capture_error}); "
            "activation figures are the copy's"
        )
    else:
        raise ProbeError(
            "raised",
            f"the model needs real values at full size ({capture_error}) and no smaller copy fits this "
            f"machine ({'; '.join(tried) or 'nothing to shrink'}): pass --entry with a smaller model",
        )
    numerics: dict[str, Any] | None = None
    numerics_error: str | None = None
    tpu_ops: list[RawOp] = []
    tpu_note = "torch_tpu is not installed: coverage uses the shipped op-table snapshot"
    if copy is not None:
        size.numerics_model = copy.description
        size.numerics_input_shapes = shapes((copy.loaded.args, copy.loaded.kwargs))
        numerics, numerics_error = _numerics_step(payload, copy.loaded.model, copy.loaded, timings)
        tpu_ops, tpu_note = _fake_tpu_step(
            payload, copy.loaded.model, copy.loaded, capture, user_dirs, timings
        )
        if tpu_ops:
            tpu_note += " (traced on the smaller copy: the op set does not depend on width or depth)"
    else:
        numerics_error = "no smaller copy fits this machine: " + ("; ".join(tried) or "nothing to shrink")
    outputs = _outputs(output)
    behaviour = None
    if copy is not None:
        with torch.no_grad():
            copy_output = copy.loaded.model.eval()(*copy.loaded.args, **copy.loaded.kwargs)
        behaviour = recognise(copy.loaded.model, copy.loaded, copy_output)
    probe = _new_probe(
        payload,
        fake.model,
        fake,
        behaviour,
        outputs,
        capture,
        tpu_ops,
        tpu_note,
        size=size,
        numerics=numerics,
        numerics_error=numerics_error,
        xla_notes=[
            "XLA memory analysis skipped: it compiles from real weights here, and this model was built "
            "on fake tensors"
        ],
        timings=timings,
        notes=notes,
    )
    return _finished(probe)


def _finished(probe: ModelProbe) -> dict[str, Any]:
    """The probe as JSON, with this process's peak memory measured last (both paths end here)."""
    probe.peak_rss_bytes = peak_rss_bytes()
    report_progress("done", 1.0)
    return probe.model_dump(mode="json")


def _new_probe(
    payload: dict[str, Any],
    model: torch.nn.Module,
    loaded: LoadedModel,
    behaviour: LMRecognition | None,
    outputs: list[torch.Tensor],
    capture: Capture,
    tpu_ops: list[RawOp],
    tpu_note: str,
    *,
    size: SizePlan,
    numerics: dict[str, Any] | None,
    numerics_error: str | None,
    xla_notes: list[str],
    timings: dict[str, float],
    depth_ratio: float = 1.0,
    shrink_note: str | None = None,
    input_shapes_vary: bool = False,
    xla: dict[str, dict[str, Any]] | None = None,
    notes: list[str] | None = None,
) -> ModelProbe:
    """The probe of both paths (real weights, full size on fake tensors), shared fields filled alike:
    sizes and the decoder-LM reading come from `model` at full size, `behaviour` from real tensors.

    Keyword arguments throughout, so that mypy checks every field of `ModelProbe` by name.
    """
    stats = parameter_stats(model)
    lm = _decoder_lm(model, behaviour, outputs)
    return ModelProbe(
        convention=loaded.convention,
        input_style=loaded.input_style,
        class_name=type(model).__name__,
        parameters=stats[0],
        parameter_bytes=_weight_bytes(payload, stats),
        buffers_bytes=stats[2],
        dtype=_weight_dtype(payload, stats),
        hf_architecture=_hf_architecture(model),
        hf_model_type=getattr(getattr(model, "config", None), "model_type", None),
        kv=lm.kv,
        lm_evidence=lm.evidence,
        position_limit=lm.position_limit,
        output_summary=", ".join(
            f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in outputs[:4]
        ),
        raw_ops=capture.raw_ops(),
        tpu_raw_ops=tpu_ops,
        tpu_note=tpu_note,
        activations=ActivationProbe(
            inference_peak_bytes=capture.peak_live_bytes,
            training_saved_bytes=capture.saved_bytes,
            batch=_batch_of(loaded),
            seq=_seq_of(loaded),
            depth_ratio=depth_ratio,
        ),
        shrink_note=shrink_note,
        size=size,
        numerics=numerics,
        numerics_error=numerics_error,
        input_shapes_vary=input_shapes_vary,
        xla=xla or {},
        xla_notes=xla_notes,
        timings=timings,
        notes=notes or [],
    )


def _capture(model: torch.nn.Module, loaded: LoadedModel, user_dirs: list[Path]) -> tuple[Capture, Any]:
    try:
        return capture_ops(
            model, loaded.args, loaded.kwargs, user_dirs, on_stage=lambda s: report_progress(s, 0.3)
        )
    except Exception as exc:
        raise ProbeError(
            "raised",
            f"the model raised while running: {type(exc).__name__}: "
            f"{(str(exc).strip().splitlines() or [''])[0]}",
        ) from exc


def _outputs(output: Any) -> list[torch.Tensor]:
    outputs = tensor_leaves(output)
    if not outputs:
        raise ProbeError(
            "bad_output",
            f"the model returned {type(output).__name__} with no tensor in it: "
            "onboarding needs at least one tensor output",
        )
    return outputs


def _numerics_step(
    payload: dict[str, Any], model: torch.nn.Module, loaded: LoadedModel, timings: dict[str, float]
) -> tuple[dict[str, Any] | None, str | None]:
    if not payload.get("numerics", True):
        return None, None
    report_progress("numerics", 0.5)
    t0 = time.perf_counter()
    result = _numerics(model, loaded, payload.get("modes"))
    timings["numerics"] = time.perf_counter() - t0
    return result


def _fake_tpu_step(
    payload: dict[str, Any],
    model: torch.nn.Module,
    loaded: LoadedModel,
    capture: Capture,
    user_dirs: list[Path],
    timings: dict[str, float],
) -> tuple[list[RawOp], str]:
    tpu_ops: list[RawOp] = []
    tpu_note = "torch_tpu is not installed: coverage uses the shipped op-table snapshot"
    if payload.get("fake_tpu", True):
        from tpu_runtime.onboard.fake_tpu import torch_tpu_available, trace_on_fake_tpu

        if torch_tpu_available():
            report_progress("fake-tpu", 0.85)
            t0 = time.perf_counter()
            locator = SourceLocator(user_dirs)
            tpu_capture, tpu_note = trace_on_fake_tpu(model, loaded.args, loaded.kwargs, locator)
            tpu_ops = _borrow_sources(tpu_capture.raw_ops(), capture.raw_ops())
            timings["fake_tpu"] = time.perf_counter() - t0
    return tpu_ops, tpu_note


WEIGHT_DTYPE_BYTES = {"f32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5}
_WEIGHT_DTYPE_NAMES = {
    "f32": "float32",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "float8",
    "int8": "int8",
    "int4": "int4",
}


def _weight_bytes(payload: dict[str, Any], stats: tuple[int, int, int, str]) -> int:
    """Parameter bytes as served: `--dtype` when given, else the dtype the model was built in."""
    dtype = payload.get("weight_dtype")
    if not dtype:
        return stats[1]
    return int(stats[0] * WEIGHT_DTYPE_BYTES[dtype])


def _weight_dtype(payload: dict[str, Any], stats: tuple[int, int, int, str]) -> str:
    dtype = payload.get("weight_dtype")
    return _WEIGHT_DTYPE_NAMES[dtype] if dtype else stats[3]


def _maybe_shrink(model: torch.nn.Module, enabled: bool) -> Any:
    return shallow_copy(model) if enabled else nullcontext(ShrinkResult([]))


def _numerics(
    model: torch.nn.Module, loaded: LoadedModel, modes: list[str] | None
) -> tuple[dict[str, Any] | None, str | None]:
    from tpu_runtime.onboard.numerics import compare_layers

    inputs: Any = loaded.kwargs if loaded.kwargs else loaded.args
    try:
        report = compare_layers(model, inputs, modes or ["default", "high", "highest", "bf16"])  # type: ignore[arg-type]
    except Exception as exc:  # numerics is one section; the rest of the report still stands
        return None, f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}"
    return report.model_dump(mode="json"), None


def _hf_architecture(model: torch.nn.Module) -> str | None:
    config = getattr(model, "config", None)
    archs = getattr(config, "architectures", None)
    if archs:
        return str(archs[0])
    name = type(model).__name__
    return name if config is not None and hasattr(config, "model_type") else None


@dataclass
class _DecoderLM:
    kv: KVGeometry | None = None
    evidence: str | None = None
    position_limit: int | None = None


def _decoder_lm(
    model: torch.nn.Module, behaviour: LMRecognition | None, outputs: list[torch.Tensor]
) -> _DecoderLM:
    """A Hugging Face causal-LM config, or causal behaviour seen on real tensors; KV sized from the
    config, else from the structure of the full model."""
    kv = _kv_geometry(model)
    config = getattr(model, "config", None)
    text = getattr(config, "text_config", None) or config
    if kv is not None:
        evidence = f"Hugging Face causal-LM architecture {type(model).__name__} (KV cache from its config)"
        if behaviour is not None:
            evidence += "; " + behaviour.evidence
        limit = getattr(text, "max_position_embeddings", None)
        return _DecoderLM(kv, evidence, int(limit) if isinstance(limit, int) else None)
    if behaviour is None:
        return _DecoderLM()
    vocab = next((int(t.shape[-1]) for t in outputs if t.dim() == 3), None)
    geometry, limit, how = structural_kv(model, vocab)
    evidence = behaviour.evidence + (f"; KV cache {how}" if how else "; KV cache size unknown")
    return _DecoderLM(geometry, evidence, limit)


def _kv_geometry(model: torch.nn.Module) -> KVGeometry | None:
    """Decoder LMs with a Hugging Face-style config; None for anything else."""
    from tpu_runtime.onboard.hf_config import kv_geometry

    config = getattr(model, "config", None)
    if config is None:
        return None
    text = getattr(config, "text_config", None) or config
    if (
        not getattr(text, "is_decoder", False)
        and "CausalLM" not in type(model).__name__
        and "LMHead" not in type(model).__name__
    ):
        return None
    return kv_geometry(config)


def _first_tensor(loaded: LoadedModel) -> torch.Tensor | None:
    for value in [*loaded.args, *loaded.kwargs.values()]:
        if isinstance(value, torch.Tensor):
            return value
    return None


def _batch_of(loaded: LoadedModel) -> int:
    t = _first_tensor(loaded)
    return int(t.shape[0]) if t is not None and t.dim() > 0 else 1


def _seq_of(loaded: LoadedModel) -> int | None:
    """Token-id inputs are (batch, seq) integers."""
    t = _first_tensor(loaded)
    if t is not None and t.dim() == 2 and not t.is_floating_point():
        return int(t.shape[1])
    return None


def _shapes_vary(loaded: LoadedModel) -> bool:
    """Call the file's input maker again: different shapes mean a TPU recompiles per shape."""
    if loaded.make_inputs is None:
        return False
    try:
        again = loaded.make_inputs()
    except Exception:
        return False
    from tpu_runtime.onboard.loader import split_inputs

    args, kwargs = split_inputs(again)
    first = [tuple(t.shape) for t in [*loaded.args, *loaded.kwargs.values()] if isinstance(t, torch.Tensor)]
    second = [tuple(t.shape) for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)]
    return first != second


def _borrow_sources(tpu_ops: list[RawOp], cpu_ops: list[RawOp]) -> list[RawOp]:
    """A submodule traced on its own has no user frame above it: use the CPU run's line for that module."""
    by_module: dict[str, RawOp] = {}
    for op in cpu_ops:
        if op.phase == "forward":
            by_module.setdefault(op.module, op)
    for op in tpu_ops:
        if op.source == "<unknown>" and op.module in by_module:
            op.source, op.source_text = by_module[op.module].source, by_module[op.module].source_text
    return tpu_ops


XLA_AUTO_ALL_BELOW_PARAMS = 20_000_000
ALL_GENERATIONS = ["v5e", "v5p", "v6e", "tpu7x"]


def _xla_generations(choice: str, params: int) -> list[str]:
    """'auto': every generation for small models (seconds), none for big ones (minutes); 'none'; 'all';
    or a comma-separated list."""
    from tpu_runtime.onboard.fake_tpu import torch_tpu_available

    if choice == "none" or not torch_tpu_available():
        return []
    if choice == "auto":
        return ALL_GENERATIONS if params <= XLA_AUTO_ALL_BELOW_PARAMS else []
    if choice == "all":
        return ALL_GENERATIONS
    return [g.strip() for g in choice.split(",") if g.strip()]


def _at_target_shape(x: Any, batch: int | None, seq: int | None) -> Any:
    """A meta tensor at the user's --batch/--seq: XLA compiles from shapes, nothing is allocated."""
    if not isinstance(x, torch.Tensor):
        return x
    shape = list(x.shape)
    if batch and shape:
        shape[0] = batch
    if seq and len(shape) == 2 and not x.is_floating_point():
        shape[1] = seq
    return torch.empty(shape, dtype=x.dtype, device="meta")


def _xla(
    model: torch.nn.Module, loaded: LoadedModel, generations: list[str], batch: int | None, seq: int | None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    from torch.utils._pytree import tree_map

    from tpu_runtime.onboard.xla_memory import xla_memory_for_generations

    args = tree_map(lambda x: _at_target_shape(x, batch, seq), loaded.args)
    kwargs = tree_map(lambda x: _at_target_shape(x, batch, seq), loaded.kwargs)
    try:
        results, failures = xla_memory_for_generations(model, args, kwargs, generations)
    except Exception as exc:  # a soft extra: the estimate still stands without it
        return {}, [f"XLA memory analysis failed: {type(exc).__name__}: {exc}".splitlines()[0]]
    notes = list(failures)
    if results:
        notes.insert(0, next(iter(results.values())).note)
    return {g: r.model_dump(mode="json") for g, r in results.items()}, notes
