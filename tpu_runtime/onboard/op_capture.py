"""Which ATen ops a model runs, forward and backward, and where in the user's code each one came from.

A `TorchDispatchMode` sees every ATen call below autograd (so backward ops too); a `TorchFunctionMode`
sits above autograd and tags each autograd node with the module and source line that created it, so a
backward op can be traced back to the forward line that caused it.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from tpu_runtime.onboard.capture_types import RawOp
from tpu_runtime.onboard.report import Phase

SITE_KEY = "tpu_agent_site"
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_OWN_DIR = str(Path(__file__).resolve().parents[1]) + os.sep
_STDLIB = str(Path(os.__file__).resolve().parent) + os.sep


def op_name(func: torch._ops.OpOverload) -> str:
    """'aten::add.Tensor', or 'aten::addmm' for a default overload."""
    overload = func._overloadname
    base = func._schema.name
    return base if overload == "default" else f"{base}.{overload}"


def storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage, also for fake and meta tensors (they have no data pointer)."""
    key: int = t.untyped_storage()._cdata
    return key


def _is_abstract(x: Any) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor) or (isinstance(x, torch.Tensor) and x.device.type == "meta")


def _call_op(func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
    """Run one op; on shape-only tensors, retry a float op whose shape rule is stricter than its kernel.

    Some shape rules accept fewer dtypes than the CPU kernel (e.g. `_grouped_mm`'s asks for bf16 while
    CPU runs it in f32); only the output's shape and dtype matter here, so compute the shape in bf16 and
    hand back the dtype the real kernel would have produced.
    """
    try:
        return func(*args, **kwargs)
    except RuntimeError as exc:
        leaves = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
        floats = {x.dtype for x in leaves if x.is_floating_point()}
        if not leaves or not all(_is_abstract(x) for x in leaves) or floats - {torch.float32}:
            raise
        if "dtype" not in str(exc) and "BF16" not in str(exc):
            raise

        def down(x: Any) -> Any:
            return x.to(torch.bfloat16) if isinstance(x, torch.Tensor) and x.is_floating_point() else x

        def up(x: Any) -> Any:
            return x.to(torch.float32) if isinstance(x, torch.Tensor) and x.is_floating_point() else x

        return tree_map(up, func(*tree_map(down, args), **tree_map(down, kwargs)))


def _metadata(node: Any) -> dict[str, Any]:
    """An autograd node's free-form metadata dict (typed loosely in torch's stubs)."""
    meta: dict[str, Any] = node.metadata
    return meta


@dataclass
class Site:
    module: str
    source: str
    source_text: str


class SourceLocator:
    """Finds the most useful frame: the user's own file first, else the innermost library frame
    that is not torch, the standard library or this package (e.g. a transformers modeling file)."""

    def __init__(self, user_dirs: list[Path]) -> None:
        self.user_dirs = [str(p.resolve()) + os.sep for p in user_dirs]
        self._kind: dict[str, int] = {}

    def _classify(self, filename: str) -> int:
        kind = self._kind.get(filename)
        if kind is None:
            path = os.path.abspath(filename)
            if any(path.startswith(d) for d in self.user_dirs) and not any(
                m in path for m in _LIBRARY_MARKERS
            ):
                kind = 2
            elif (
                path.startswith(_OWN_DIR)
                or (path.startswith(_STDLIB) and not any(m in path for m in _LIBRARY_MARKERS))
                or (os.sep + "torch" + os.sep) in path
                or filename.startswith("<")
            ):
                kind = 0
            else:
                kind = 1
            self._kind[filename] = kind
        return kind

    def locate(self, frame: FrameType | None) -> tuple[str, str]:
        library: FrameType | None = None
        while frame is not None:
            kind = self._classify(frame.f_code.co_filename)
            if kind == 2:
                return self._describe(frame)
            if kind == 1 and library is None:
                library = frame
            frame = frame.f_back
        if library is not None:
            return self._describe(library)
        return "<unknown>", ""

    def _describe(self, frame: FrameType) -> tuple[str, str]:
        filename, line = frame.f_code.co_filename, frame.f_lineno
        text = linecache.getline(filename, line).strip()
        return f"{self._short_path(filename)}:{line}", text

    def _short_path(self, filename: str) -> str:
        """User files relative to their folder, library files from their package down."""
        path = os.path.abspath(filename)
        for marker in _LIBRARY_MARKERS:
            if marker in path:
                return path.split(marker, 1)[1]
        for folder in self.user_dirs:
            if path.startswith(folder):
                return path[len(folder) :]
        return path


@dataclass
class _Acc:
    count: int
    site: Site


@dataclass
class Capture:
    """Everything one capture run learned."""

    ops: dict[tuple[str, Phase], _Acc] = field(default_factory=dict)
    peak_live_bytes: int = 0
    saved_bytes: int = 0

    def raw_ops(self) -> list[RawOp]:
        return [
            RawOp(
                op=op,
                phase=phase,
                count=acc.count,
                module=acc.site.module,
                source=acc.site.source,
                source_text=acc.site.source_text,
            )
            for (op, phase), acc in self.ops.items()
        ]


class _ModuleTracker:
    """Keeps the dotted name of the innermost module being run, via global module hooks."""

    def __init__(self, root: torch.nn.Module) -> None:
        self.names = {id(m): name or "(model)" for name, m in root.named_modules()}
        self.stack: list[str] = []
        self._handles: list[Any] = []

    def __enter__(self) -> _ModuleTracker:
        reg = torch.nn.modules.module
        self._handles = [
            reg.register_module_forward_pre_hook(self._pre),
            reg.register_module_forward_hook(self._post, always_call=True),
        ]
        return self

    def __exit__(self, *exc: object) -> None:
        for handle in self._handles:
            handle.remove()
        self.stack.clear()

    def _pre(self, module: torch.nn.Module, args: Any) -> None:
        self.stack.append(self.names.get(id(module), type(module).__name__))

    def _post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        if self.stack:
            self.stack.pop()

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else "(model)"


class _SiteTagger(TorchFunctionMode):
    """Tags autograd nodes with the forward site that made them (read back during backward)."""

    def __init__(self, tracker: _ModuleTracker, locator: SourceLocator) -> None:
        super().__init__()
        self.tracker = tracker
        self.locator = locator

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for leaf in tree_flatten(out)[0]:
            node = getattr(leaf, "grad_fn", None) if isinstance(leaf, torch.Tensor) else None
            if node is not None and SITE_KEY not in _metadata(node):
                source, text = self.locator.locate(sys._getframe(1))
                _metadata(node)[SITE_KEY] = Site(self.tracker.current, source, text)
        return out


class _OpRecorder(TorchDispatchMode):
    def __init__(
        self,
        capture: Capture,
        tracker: _ModuleTracker,
        locator: SourceLocator,
        weights: frozenset[int] = frozenset(),
    ) -> None:
        super().__init__()
        self.weights = weights  # parameter storages: their views (a weight's `.t()`) are not activations
        self.capture = capture
        self.tracker = tracker
        self.locator = locator
        self.phase: Phase = "forward"
        self._last_backward_site = Site("(loss)", "<sum of the model's outputs>", "")
        self._live: dict[int, list[int]] = {}
        self._live_bytes = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = _call_op(func, args, kwargs or {})
        if func.namespace == "prim":  # TorchScript bookkeeping such as prim::device, not a kernel
            return out
        key = (op_name(func), self.phase)
        acc = self.capture.ops.get(key)
        if acc is None:
            self.capture.ops[key] = _Acc(1, self._site())
        else:
            acc.count += 1
        if self.phase == "forward":
            self._track_live(out)
        return out

    def _site(self) -> Site:
        if self.phase == "backward":
            node = torch._C._current_autograd_node()
            site = _metadata(node).get(SITE_KEY) if node is not None else None
            if site is not None:
                self._last_backward_site = site
            return self._last_backward_site
        source, text = self.locator.locate(sys._getframe(2))
        return Site(self.tracker.current, source, text)

    def _track_live(self, out: Any) -> None:
        for leaf in tree_flatten(out)[0]:
            if not isinstance(leaf, torch.Tensor):
                continue
            try:
                key, nbytes = storage_key(leaf), leaf.untyped_storage().nbytes()
            except (RuntimeError, NotImplementedError):
                continue
            if key in self.weights:
                continue
            entry = self._live.get(key)
            if entry is None:
                entry = self._live[key] = [nbytes, 0]
                self._live_bytes += nbytes
                self.capture.peak_live_bytes = max(self.capture.peak_live_bytes, self._live_bytes)
            entry[1] += 1
            weakref.finalize(leaf, self._release, key)

    def _release(self, key: int) -> None:
        entry = self._live.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] <= 0:
            self._live_bytes -= entry[0]
            del self._live[key]


@contextmanager
def _saved_tensor_meter(capture: Capture, exclude: frozenset[int]) -> Iterator[None]:
    """Adds up the distinct storages autograd keeps for backward, the weights excluded."""
    seen: set[int] = set()

    def pack(t: torch.Tensor) -> torch.Tensor:
        try:
            key = storage_key(t)
            if key not in seen and key not in exclude:
                seen.add(key)
                capture.saved_bytes += t.untyped_storage().nbytes()
        except (RuntimeError, NotImplementedError):
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield


def _scalar_loss(output: Any) -> torch.Tensor | None:
    """Something to call backward on: the sum of every floating-point output that needs grad."""
    leaves = [t for t in tree_flatten(_unwrap(output))[0] if isinstance(t, torch.Tensor)]
    total: torch.Tensor | None = None
    for t in leaves:
        if t.is_floating_point() and t.requires_grad:
            part = t.float().sum()
            total = part if total is None else total + part
    return total


def _unwrap(output: Any) -> Any:
    """HF ModelOutput is an OrderedDict subclass; pytree needs a plain container."""
    if isinstance(output, dict) and type(output) is not dict:
        return dict(output.items())
    return output


def tensor_leaves(output: Any) -> list[torch.Tensor]:
    return [t for t in tree_flatten(_unwrap(output))[0] if isinstance(t, torch.Tensor)]


def capture_ops(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    user_dirs: list[Path],
    backward: bool = True,
    on_stage: Callable[[str], None] | None = None,
) -> tuple[Capture, Any]:
    """Record every ATen call of an inference forward (eval, no grad) and a training step (train mode,
    forward and backward) on CPU.

    Forward counts are those of the training forward, plus ops only inference runs. `peak_live_bytes` is
    the inference peak (autograd's saved tensors excluded); `saved_bytes` what training keeps for backward.
    Returns the capture and the inference output.
    """
    locator = SourceLocator(user_dirs)
    was_training = model.training
    params = frozenset(storage_key(t) for t in [*model.parameters(), *model.buffers()])
    inference = Capture()
    try:
        with _ModuleTracker(model) as tracker:
            model.eval()
            with torch.no_grad(), _OpRecorder(inference, tracker, locator, params):
                output = model(*args, **kwargs)
            if not backward:
                return inference, output
            if on_stage:
                on_stage("backward")
            training = Capture()
            model.train()
            recorder = _OpRecorder(training, tracker, locator, params)
            with torch.enable_grad(), _saved_tensor_meter(training, params), _SiteTagger(tracker, locator):
                with recorder:
                    train_output = model(*args, **kwargs)
                loss = _scalar_loss(train_output)
                if loss is not None and loss.grad_fn is not None:
                    _metadata(loss.grad_fn)[SITE_KEY] = Site("(loss)", "<sum of the model's outputs>", "")
                    recorder.phase = "backward"
                    with recorder:
                        loss.backward()
            model.zero_grad(set_to_none=True)
    finally:
        model.train(was_training)
    for key, acc in inference.ops.items():
        training.ops.setdefault(key, acc)
    training.peak_live_bytes = inference.peak_live_bytes
    return training, output
