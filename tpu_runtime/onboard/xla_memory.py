"""XLA:TPU's own memory analysis of a model, compiled on this host without a TPU.

Two steps, both offline:

1. TorchTPU builds the StableHLO. Its device is initialised (no chip is opened, nothing runs), the
   parameters, buffers and tensor inputs become TorchTPU placeholder tensors (shape and dtype only, no
   storage), and the computation runs under TorchTPU's graph-building eager mode (the mode its own
   `torch.export` path uses). `tpu_torch_compile.build_mlir` turns the recorded graph into a StableHLO
   module.
   - inference: the model's own `forward` runs on the placeholders, so ops take TorchTPU's routes
     (`aten.linear` whole, attention to TorchTPU's kernel).
   - training: a forward plus `autograd.grad` of a scalar loss is first traced to an ATen graph on
     fake CPU tensors (`make_fx`; TorchTPU cannot run the autograd engine without a chip), then that
     graph is replayed on the placeholders. The loss is the sum of the means of the floating-point
     outputs; the outputs are that loss and every trainable parameter's gradient.
2. JAX compiles the module for one device of a compile-only TPU topology
   (`jax.experimental.topologies.get_topology_desc`): libtpu's XLA:TPU compiler runs on the host CPU
   and reports the executable's memory statistics (argument, output, alias, temporary and
   generated-code bytes), per device.

Call it in a child process the caller controls: it initialises TorchTPU's device and switches its
eager mode while it traces. Every failure comes back as `(None, reason)`; nothing raises.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import torch
from pydantic import BaseModel, Field
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

Mode = Literal["inference", "training"]

#: Generations whose TPU topology names have three dimensions (the rest have two).
_THREE_D = ("v4", "v5p", "tpu7x")

_READS_VALUES = (
    "the forward reads tensor values (.item(), a data-dependent `if`, nonzero or boolean masking), "
    "which a graph trace cannot do"
)
_NEEDS_CHIP = (
    "the forward needs a real TPU at trace time (random numbers drawn in forward, or a transfer "
    "TorchTPU cannot embed as a constant)"
)
#: Substrings of TorchTPU and tracing errors, and what they mean for the user's model.
_HINTS = (
    ("DataDependent", _READS_VALUES),
    ("cannot record EventSnapshot", _READS_VALUES),
    ("PjRt client", _NEEDS_CHIP),
)


class XlaMemory(BaseModel):
    """XLA:TPU's memory statistics for one compiled program, per device."""

    mode: Mode = Field(description="'inference': the forward; 'training': forward + gradients, no optimizer")
    generation: str = Field(description="canonical TPU generation, e.g. 'v6e'")
    topology: str = Field(description="the compile-only topology compiled for, e.g. 'v6e:1x1'")
    devices_in_topology: int = Field(description="devices libtpu shows for it (v4, TPU7x: 2 per chip)")
    device_kind: str = Field(description="device kind libtpu reports for the compile target")
    dtype: str = Field(description="dtype of the floating-point parameters as compiled")
    state_bytes: int = Field(description="parameters + buffers as compiled (unpadded)")
    input_bytes: int = Field(description="tensor inputs as compiled (unpadded)")
    argument_bytes: int = Field(description="XLA: all arguments (parameters, buffers, inputs), padded")
    output_bytes: int = Field(description="XLA: outputs (training: loss and gradients)")
    alias_bytes: int = Field(description="XLA: bytes an output shares with an argument")
    temp_bytes: int = Field(description="XLA: temporaries (activations, scratch) in device memory")
    generated_code_bytes: int = Field(description="XLA: the compiled program")
    total_bytes: int = Field(description="argument + output - alias + temp + generated code")
    trace_seconds: float
    compile_seconds: float
    note: str


def topology_for(generation: str) -> tuple[str, str]:
    """(canonical generation, single-chip topology) for a generation name or alias; an explicit topology
    such as 'v6e:2x2' is kept (its first device is compiled for)."""
    if ":" in generation:
        name, _, shape = generation.partition(":")
        return _canonical(name), f"{_canonical(name)}:{shape.strip()}"
    name = _canonical(generation)
    return name, f"{name}:{'1x1x1' if name in _THREE_D else '1x1'}"


def missing_requirements() -> list[str]:
    """The packages this analysis needs that are not installed (checked without importing them)."""
    return [name for name in ("torch_tpu", "libtpu", "jax") if importlib.util.find_spec(name) is None]


def xla_memory_analysis(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    generation: str,
    *,
    dtype: torch.dtype | None = None,
    training: bool = False,
) -> tuple[XlaMemory | None, str]:
    """Compile the model for one device of `generation` and return XLA's memory analysis and a note.

    `dtype`, when given, casts floating-point parameters, buffers and inputs first (e.g. bfloat16).
    `training` compiles forward + gradients (dropout off, no optimizer state) instead of the forward.
    Returns (None, reason) when any step fails.
    """
    results, notes = xla_memory_for_generations(
        model, args, kwargs, [generation], dtype=dtype, training=training
    )
    found = next(iter(results.values()), None)
    return found, notes[0] if notes else (found.note if found else "no result")


def xla_memory_for_generations(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    generations: list[str],
    *,
    dtype: torch.dtype | None = None,
    training: bool = False,
) -> tuple[dict[str, XlaMemory], list[str]]:
    """Trace the graph once, compile it for each generation; returns results by generation and the
    reasons for any that failed. Inputs may be meta tensors: only shapes and dtypes are used."""
    _prepare_environment()
    missing = missing_requirements()
    if missing:
        return {}, [f"not installed: {', '.join(missing)} (install the 'tpu' extra)"]
    try:
        import torch_tpu
        from torch_tpu._internal import execution_mode
        from torch_tpu._internal.compile import tpu_torch_compile
    except Exception as exc:
        return {}, [f"torch_tpu is not importable: {_first_line(exc)}"]
    mode: Mode = "training" if training else "inference"

    start = time.perf_counter()
    was_training = model.training
    model.eval()  # dropout off in both modes: random numbers cannot be drawn without a chip
    try:
        torch_tpu._loader._init_device("tpu")
        build = _Builder(model, dtype, tpu_torch_compile, execution_mode)
        mlir_text = build.training(args, kwargs) if training else build.inference(args, kwargs)
    except Exception as exc:
        return {}, [f"TorchTPU could not build the {mode} graph: {_explain(exc)}"]
    finally:
        model.train(was_training)
    trace_seconds = time.perf_counter() - start

    results: dict[str, XlaMemory] = {}
    failures: list[str] = []
    for generation in generations:
        try:
            generation_name, topology = topology_for(generation)
        except Exception as exc:
            failures.append(f"cannot name a topology for {generation!r}: {_first_line(exc)}")
            continue
        outcome = _compile_for(mlir_text, build, mode, training, generation_name, topology, trace_seconds)
        if isinstance(outcome, str):
            failures.append(outcome)
        else:
            results[generation_name] = outcome
    return results, failures


def _compile_for(
    mlir_text: str,
    build: _Builder,
    mode: Mode,
    training: bool,
    generation_name: str,
    topology: str,
    trace_seconds: float,
) -> XlaMemory | str:
    try:
        from jax.experimental import topologies

        devices: list[Any] = list(topologies.get_topology_desc(topology, "tpu").devices)
        device = devices[0]
    except Exception as exc:
        return f"libtpu has no compile-only topology {topology!r}: {_first_line(exc)}"
    start = time.perf_counter()
    try:
        stats = _compile(mlir_text, device)
    except Exception as exc:
        return f"XLA:TPU could not compile the {mode} graph for {topology}: {_first_line(exc)}"
    compile_seconds = time.perf_counter() - start

    argument, output = int(stats.argument_size_in_bytes), int(stats.output_size_in_bytes)
    alias, temp = int(stats.alias_size_in_bytes), int(stats.temp_size_in_bytes)
    code = int(stats.generated_code_size_in_bytes)
    what = (
        "forward + gradients of the summed output means (dropout off, no optimizer state), traced on CPU "
        "with attention in its math form"
        if training
        else "forward (inference)"
    )
    note = (
        f"{what} compiled by XLA:TPU for one device of compile-only topology {topology} "
        f"({device.device_kind}) on this host; graph by torch_tpu {_version('torch_tpu')}, compiler libtpu "
        f"{_version('libtpu')} via jax {_version('jax')}; bytes are per device (the topology has "
        f"{len(devices)}), nothing ran on a TPU"
    )
    return XlaMemory(
        mode=mode,
        generation=generation_name,
        topology=topology,
        devices_in_topology=len(devices),
        device_kind=str(device.device_kind),
        dtype=build.compiled_dtype,
        state_bytes=build.state_bytes,
        input_bytes=build.input_bytes,
        argument_bytes=argument,
        output_bytes=output,
        alias_bytes=alias,
        temp_bytes=temp,
        generated_code_bytes=code,
        total_bytes=argument + output - alias + temp + code,
        trace_seconds=round(trace_seconds, 3),
        compile_seconds=round(compile_seconds, 3),
        note=note,
    )


class _Builder:
    """Builds the StableHLO text of the model's inference or training graph on TorchTPU placeholders."""

    def __init__(
        self, model: torch.nn.Module, dtype: torch.dtype | None, tpu_torch_compile: Any, execution_mode: Any
    ) -> None:
        self.model = model
        self.dtype = dtype
        self.ttc = tpu_torch_compile
        self.execution_mode = execution_mode
        self.named = [*model.named_parameters(), *model.named_buffers()]
        self.trainable = {name for name, p in model.named_parameters() if p.requires_grad}
        floats = [self._dtype_of(t) for _, t in self.named if t.is_floating_point()]
        self.compiled_dtype = str(max(set(floats), key=floats.count) if floats else torch.float32)
        self.compiled_dtype = self.compiled_dtype.replace("torch.", "")
        self.state_bytes = sum(t.numel() * self._dtype_of(t).itemsize for _, t in self.named)
        self.input_bytes = 0

    def _dtype_of(self, t: torch.Tensor) -> torch.dtype:
        return self.dtype if self.dtype is not None and t.is_floating_point() else t.dtype

    def _placeholder(self, t: torch.Tensor) -> torch.Tensor:
        ph: torch.Tensor = self.ttc.placeholder(list(t.shape), self._dtype_of(t))
        return ph

    def _inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[torch.Tensor], Any]:
        """Flat tensor inputs as placeholders, and (args, kwargs) with each tensor replaced by its own."""
        flat: list[torch.Tensor] = []

        def swap(x: Any) -> Any:
            if isinstance(x, torch.Tensor):
                flat.append(self._placeholder(x))
                return flat[-1]
            return x

        replaced = tree_map(swap, (tuple(args), dict(kwargs)))
        self.input_bytes = sum(t.numel() * t.element_size() for t in flat)
        return flat, replaced

    def _build(self, results: list[torch.Tensor], arguments: list[torch.Tensor]) -> str:
        unique: dict[int, torch.Tensor] = {}
        for t in results:
            unique.setdefault(id(t), t)
        if not unique:
            raise ValueError("the model returned no tensor")
        module = self.ttc.build_mlir(list(unique.values()), arguments)
        text: str = self.ttc.serialize_mlir_text(module)
        return text

    @contextmanager
    def _graph_mode(self) -> Iterator[None]:
        graph_mode = self.execution_mode.EagerMode._INTERNAL_COMPILE_FX_GRAPH
        with self.execution_mode.set_eager_mode(graph_mode), torch.no_grad(), _CpuConstants(self.ttc):
            yield

    def inference(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        from tpu_runtime.onboard.op_capture import tensor_leaves

        state = {name: self._placeholder(t) for name, t in self.named}
        flat, (ph_args, ph_kwargs) = self._inputs(args, kwargs)
        arguments = [*state.values(), *flat]
        # Run on copies, as TorchTPU's export does, so an in-place op cannot rewrite a graph argument.
        copies = {id(t): t.clone() for t in arguments}

        def copy_of(x: Any) -> Any:
            return copies.get(id(x), x) if isinstance(x, torch.Tensor) else x

        with self._graph_mode():
            run_state = {name: copies[id(t)] for name, t in state.items()}
            output = torch.func.functional_call(
                self.model, run_state, tree_map(copy_of, ph_args), tree_map(copy_of, ph_kwargs)
            )
            if not tensor_leaves(output):
                raise ValueError(f"the forward returned {type(output).__name__} with no tensor in it")
            return self._build(tensor_leaves(output), arguments)

    def training(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from torch.nn.attention import SDPBackend, sdpa_kernel

        from tpu_runtime.onboard.op_capture import tensor_leaves

        model, trainable = self.model, self.trainable
        if not trainable:
            raise ValueError("the model has no trainable parameter (requires_grad) to take gradients of")

        def step(state: dict[str, torch.Tensor], call_args: Any, call_kwargs: Any) -> Any:
            output = torch.func.functional_call(model, state, call_args, call_kwargs)
            floats = [t for t in tensor_leaves(output) if t.is_floating_point()]
            if not floats:
                raise ValueError("the forward returned no floating-point tensor to take gradients of")
            loss = torch.stack([t.float().mean() for t in floats]).sum()
            wrt = [state[name] for name in state if name in trainable]
            return loss, torch.autograd.grad(loss, wrt, allow_unused=True)

        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        with fake_mode:

            def fake(x: Any) -> Any:
                if not isinstance(x, torch.Tensor):
                    return x
                return torch.empty(x.shape, dtype=self._dtype_of(x), requires_grad=x.requires_grad)

            fake_state = {name: fake(t) for name, t in self.named}
            fake_args, fake_kwargs = tree_map(fake, (tuple(args), dict(kwargs)))
        with sdpa_kernel(SDPBackend.MATH):  # the CPU fused kernels are CPU-only ops
            graph = make_fx(step, tracing_mode="fake")(fake_state, fake_args, fake_kwargs)
        for node in graph.graph.nodes:  # factory ops were traced for the CPU: retarget them
            device = node.kwargs.get("device")
            if device is not None and torch.device(device).type == "cpu":
                node.kwargs = {**node.kwargs, "device": torch.device("tpu")}
        graph.recompile()

        state = {name: self._placeholder(t) for name, t in self.named}
        flat, (ph_args, ph_kwargs) = self._inputs(args, kwargs)
        graph_inputs = tree_flatten((state, ph_args, ph_kwargs))[0]  # make_fx's placeholder order
        copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in graph_inputs]
        with self._graph_mode():
            results = _ConstantsInterpreter(graph, self.ttc).run(*copies)
            tensors = [t for t in tree_flatten(results)[0] if isinstance(t, torch.Tensor)]
            return self._build(tensors, [*state.values(), *flat])


class _ConstantsInterpreter(torch.fx.Interpreter):
    """Replays an ATen graph; CPU tensor constants the trace captured become TorchTPU constants."""

    def __init__(self, graph: torch.fx.GraphModule, tpu_torch_compile: Any) -> None:
        super().__init__(graph)
        self._make_constant = tpu_torch_compile.make_constant_tensor

    def fetch_attr(self, target: str) -> Any:
        value = super().fetch_attr(target)
        if isinstance(value, torch.Tensor) and value.device.type == "cpu":
            return self._make_constant(value.contiguous())
        return value


class _CpuConstants(TorchDispatchMode):
    """A CPU tensor the forward moves to the device (`mask.to(x.device)`) becomes a graph constant,
    as TorchTPU's export embeds such values; moving it for real would need a chip."""

    def __init__(self, tpu_torch_compile: Any) -> None:
        super().__init__()
        self._make_constant = tpu_torch_compile.make_constant_tensor

    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func is torch.ops.aten._to_copy.default and args and isinstance(args[0], torch.Tensor):
            source, target = args[0], kwargs.get("device")
            if source.device.type == "cpu" and target is not None and torch.device(target).type != "cpu":
                return self._make_constant(source.to(dtype=kwargs.get("dtype") or source.dtype).contiguous())
        return func(*args, **kwargs)


def _prepare_environment() -> None:
    """Before libtpu loads. Off a TPU VM: no metadata-server query, and no libtpu lockfile either, since
    no chip is used and two compile-only processes (two onboarding jobs) must not lock each other out."""
    from tpu_runtime.platform_env import apply_safe_defaults, on_tpu_vm

    apply_safe_defaults()
    if not on_tpu_vm():
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


def _compile(mlir_text: str, device: Any) -> Any:
    """Compile StableHLO text for one compile-only device; return its CompiledMemoryStats."""
    from jax._src import compiler
    from jax._src.interpreters import mlir
    from jax._src.lib import xla_client

    with mlir.make_ir_context():
        module = mlir.ir.Module.parse(mlir_text)
        options = compiler.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=[device])
        executable = device.client.compile(
            module, executable_devices=xla_client.DeviceList((device,)), compile_options=options
        )
    return executable.get_compiled_memory_stats()


def _canonical(name: str) -> str:
    from tpu_runtime.chips import UnknownChipError, get_chip

    try:
        return get_chip(name).name
    except UnknownChipError:
        return name.strip().lower()


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:240]}" if lines else type(exc).__name__


def _explain(exc: BaseException) -> str:
    text = _first_line(exc)
    for marker, meaning in _HINTS:
        if marker in f"{type(exc).__name__}: {exc}":
            return f"{meaning} ({text})"
    return text
