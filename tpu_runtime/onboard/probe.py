"""The child-process half of onboarding: everything that executes the user's model.

Called through `tpu_runtime.sandbox.run_child("tpu_runtime.onboard.probe:run", payload)`; returns a
`ModelProbe` as JSON. Order matters: CPU capture and numerics run before torch_tpu is imported.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import torch

from tpu_runtime.child_entry import report_progress
from tpu_runtime.onboard.capture import SourceLocator, capture_ops, tensor_leaves
from tpu_runtime.onboard.capture_types import ActivationProbe, KVGeometry, ModelProbe, RawOp
from tpu_runtime.onboard.loader import LoadedModel, ModelLoadError, load_model
from tpu_runtime.onboard.shrink import ShrinkResult, shallow_copy


class ProbeError(Exception):
    """A failure of the user's model that deserves its own one-line explanation."""

    def __init__(self, kind: str, one_line: str) -> None:
        super().__init__(one_line)
        self.failure_kind = kind
        self.one_line = one_line


def run(payload: dict[str, Any]) -> dict[str, Any]:
    torch.manual_seed(int(payload.get("seed", 0)))
    timings: dict[str, float] = {}
    start = time.perf_counter()
    report_progress("load", 0.0)
    path = Path(payload["model_file"]).resolve()
    try:
        loaded = load_model(path, payload.get("entry"))
    except ModelLoadError as exc:
        raise ProbeError("bad_input", str(exc)) from exc
    except Exception as exc:
        raise ProbeError(
            "raised",
            f"loading {path.name} raised {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}",
        ) from exc
    model = loaded.model
    timings["load"] = time.perf_counter() - start

    params = sum(p.numel() for p in model.parameters())
    shrink_mode = payload.get("shrink", "auto")
    want_shrink = shrink_mode == "always" or (
        shrink_mode == "auto" and params > int(payload.get("shrink_above_params", 100_000_000))
    )
    user_dirs = [path.parent]
    report_progress("ops", 0.1)
    t0 = time.perf_counter()
    with _maybe_shrink(model, want_shrink) as shrink:
        try:
            capture, output = capture_ops(
                model, loaded.args, loaded.kwargs, user_dirs, on_stage=lambda s: report_progress(s, 0.3)
            )
        except Exception as exc:
            raise ProbeError(
                "raised",
                f"the model raised while running: {type(exc).__name__}: "
                f"{(str(exc).strip().splitlines() or [''])[0]}",
            ) from exc
        outputs = tensor_leaves(output)
        if not outputs:
            raise ProbeError(
                "bad_output",
                f"the model returned {type(output).__name__} with no tensor in it: "
                "onboarding needs at least one tensor output",
            )
        timings["ops"] = time.perf_counter() - t0

        numerics: dict[str, Any] | None = None
        numerics_error: str | None = None
        if payload.get("numerics", True):
            report_progress("numerics", 0.5)
            t0 = time.perf_counter()
            numerics, numerics_error = _numerics(model, loaded, payload.get("modes"))
            timings["numerics"] = time.perf_counter() - t0

        tpu_ops, tpu_note = [], "torch_tpu is not installed: coverage uses the shipped op-table snapshot"
        if payload.get("fake_tpu", True):
            from tpu_runtime.onboard.fake_tpu import torch_tpu_available, trace_on_fake_tpu

            if torch_tpu_available():
                report_progress("fake-tpu", 0.85)
                t0 = time.perf_counter()
                tpu_capture, tpu_note = trace_on_fake_tpu(
                    model, loaded.args, loaded.kwargs, SourceLocator(user_dirs)
                )
                tpu_ops = _borrow_sources(tpu_capture.raw_ops(), capture.raw_ops())
                timings["fake_tpu"] = time.perf_counter() - t0
        shrink_note = shrink.describe() if shrink.lists else None
        depth = shrink.depth_ratio

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

    probe = ModelProbe(
        convention=loaded.convention,
        class_name=type(model).__name__,
        parameters=params,
        parameter_bytes=sum(p.numel() * p.element_size() for p in model.parameters()),
        buffers_bytes=sum(b.numel() * b.element_size() for b in model.buffers()),
        dtype=str(next((p.dtype for p in model.parameters()), torch.float32)).replace("torch.", ""),
        hf_architecture=_hf_architecture(model),
        hf_model_type=getattr(getattr(model, "config", None), "model_type", None),
        kv=_kv_geometry(model),
        output_summary=", ".join(
            f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for t in outputs[:4]
        ),
        raw_ops=capture.raw_ops(),
        tpu_raw_ops=tpu_ops,
        tpu_note=tpu_note,
        shrink_note=shrink_note,
        activations=ActivationProbe(
            inference_peak_bytes=capture.peak_live_bytes,
            training_saved_bytes=capture.saved_bytes,
            batch=_batch_of(loaded),
            seq=_seq_of(loaded),
            depth_ratio=depth,
        ),
        numerics=numerics,
        numerics_error=numerics_error,
        input_shapes_vary=_shapes_vary(loaded),
        xla=xla,
        xla_notes=xla_notes,
        timings=timings,
    )
    probe.peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    report_progress("done", 1.0)
    return probe.model_dump(mode="json")


def _maybe_shrink(model: torch.nn.Module, enabled: bool) -> Any:
    from contextlib import nullcontext

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


def _kv_geometry(model: torch.nn.Module) -> KVGeometry | None:
    """Decoder LMs with a Hugging Face-style config; None for anything else."""
    config = getattr(model, "config", None)
    if config is None:
        return None
    config = getattr(config, "text_config", None) or config
    if (
        not getattr(config, "is_decoder", False)
        and "CausalLM" not in type(model).__name__
        and "LMHead" not in type(model).__name__
    ):
        return None
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    if not (layers and heads and hidden):
        return None
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    return KVGeometry(layers=int(layers), kv_heads=int(kv_heads), head_dim=int(head_dim))


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
