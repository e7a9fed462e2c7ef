"""A real copy of the model small enough for this machine, for numerics and for ops that need real values.

When the model or its example inputs would not fit the memory budget (or would take minutes on a CPU),
the full-size run happens on fake tensors and the comparison against float64 runs on a copy shrunk in
depth and width. Each way of shrinking is tried on fake tensors first (free), and the first one that fits
is built for real:

1. a Hugging Face config with two layers, four heads of the original size, a 1,024-token vocabulary and
   enough experts for the router (`hf_config.shrink_config`);
2. the file's own size constants (`M = 32768` at module level, as KernelBench files have them) divided
   by a power of two, so `get_inputs()` and `get_init_inputs()` build consistent smaller shapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from tpu_runtime.onboard.full_size import build_fake, forward_flops, parameter_stats, shapes, tensor_bytes
from tpu_runtime.onboard.loader import LoadedModel

GIB = 1 << 30
SMALL_BATCH = 2
SMALL_SEQ = 64
#: Size constants below this are left alone: kernel sizes, strides, group counts, small channel counts.
MIN_CONSTANT = 16


@dataclass(frozen=True)
class Budget:
    """How much a real run may take here. `memory_bytes` is the child's limit (`--memory-gb`)."""

    memory_bytes: int
    real_flops: float = 5e10  # one forward above this runs the whole job for minutes on 2 cores
    real_input_bytes: int = 256 << 20  # element-wise work on more input than this takes minutes too
    copy_flops: float = 5e9
    copy_bytes: int = 512 << 20
    #: Inputs of the copy: element-wise work (softmax, norms, reductions) counts no FLOPs, yet numerics
    #: runs it in float64 and in every precision mode; 384 MiB of softmax input took over two minutes.
    copy_input_bytes: int = 64 << 20

    def fits_real(self, m: Measure) -> bool:
        """Whether the model at full size can run for real: capture, float64 reference and four modes."""
        return (
            m.real_run_bytes() <= 0.6 * self.memory_bytes
            and m.input_bytes <= self.real_input_bytes
            and (m.flops or 0) <= self.real_flops
        )

    def fits_copy(self, m: Measure) -> bool:
        return (
            m.weight_bytes + m.input_bytes <= self.copy_bytes
            and m.input_bytes <= self.copy_input_bytes
            and (m.flops or 0) <= self.copy_flops
        )


@dataclass(frozen=True)
class Measure:
    """Sizes of one build, read on fake tensors."""

    parameters: int
    weight_bytes: int
    input_bytes: int
    flops: int | None
    activation_bytes: int = 0

    @classmethod
    def of(cls, loaded: LoadedModel, activation_bytes: int = 0) -> Measure:
        params, pbytes, bbytes, _ = parameter_stats(loaded.model)
        return cls(
            parameters=params,
            weight_bytes=pbytes + bbytes,
            input_bytes=tensor_bytes((loaded.args, loaded.kwargs)),
            flops=forward_flops(loaded.model, loaded.args, loaded.kwargs),
            activation_bytes=activation_bytes,
        )

    def real_run_bytes(self) -> int:
        """Weights and inputs as f32 and float64 copies at once (numerics reference), activations twice."""
        return 3 * (self.weight_bytes + self.input_bytes) + 2 * self.activation_bytes


@dataclass
class SmallCopy:
    loaded: LoadedModel
    description: str


@dataclass
class _Candidate:
    description: str
    build: Callable[[], LoadedModel]
    details: Callable[[], str] | None = None  # what the real build changed, known once it has run


def small_copy(
    full: LoadedModel,
    rebuild: Callable[[Callable[[ModuleType], None] | None], LoadedModel] | None,
    budget: Budget,
    user_dirs: list[Path],
) -> tuple[SmallCopy | None, list[str]]:
    """The first smaller build that fits `budget`, built for real; else None and what was tried.

    `rebuild(patch)` loads the user's file again with `patch` applied to its module (None for
    `--hf-config`, which has no file).
    """
    tried: list[str] = []
    full_params = parameter_stats(full.model)[0]
    for candidate in _candidates(full, rebuild):
        fake, failure = build_fake(candidate.build, user_dirs)
        if fake is None:
            tried.append(f"{candidate.description}: {failure.describe() if failure else 'failed'}")
            continue
        measure = Measure.of(fake)
        if measure.flops is None:
            tried.append(f"{candidate.description}: its forward does not run on fake tensors")
            continue
        if not budget.fits_copy(measure):
            tried.append(
                f"{candidate.description}: still {measure.weight_bytes / GIB:.2f} GiB of weights, "
                f"{measure.input_bytes / GIB:.2f} GiB of inputs, {measure.flops:.2g} FLOPs"
            )
            continue
        torch.manual_seed(0)
        real = candidate.build()
        params = parameter_stats(real.model)[0]
        what = candidate.details() if candidate.details else candidate.description
        counts = f"; {params:,} parameters instead of {full_params:,}" if full_params else ""
        small_in = ", ".join(shapes((real.args, real.kwargs)))
        full_in = ", ".join(shapes((full.args, full.kwargs)))
        description = (
            f"a smaller copy with random weights: {what}{counts}; inputs {small_in} instead of {full_in}"
        )
        return SmallCopy(real, description), tried
    return None, tried


def _candidates(
    full: LoadedModel, rebuild: Callable[[Callable[[ModuleType], None] | None], LoadedModel] | None
) -> Iterator[_Candidate]:
    config = getattr(full.model, "config", None)
    if config is not None and hasattr(config, "to_dict") and hasattr(type(full.model), "_from_config"):
        from tpu_runtime.onboard.hf_config import shrink_config

        small, changes = shrink_config(config)
        if changes:
            cls = type(full.model)
            vocab = int(getattr(getattr(small, "text_config", None) or small, "vocab_size", 0) or 0)

            def build_hf(cls: Any = cls, small: Any = small, vocab: int = vocab) -> LoadedModel:
                model = cls._from_config(small)
                args, kwargs = small_inputs(full.args, full.kwargs, vocab)
                return LoadedModel(model=model, args=args, kwargs=kwargs, convention=full.convention)

            yield _Candidate("config " + ", ".join(changes), build_hf)
    if rebuild is not None:
        for shift in range(1, 13):
            factor = 1 << shift
            scaler = ConstantScaler(factor)
            yield _Candidate(
                f"the file's size constants divided by {factor}",
                lambda scaler=scaler: rebuild(scaler),  # type: ignore[misc]
                scaler.describe,
            )


class ConstantScaler:
    """Divides a module's integer constants of at least `MIN_CONSTANT` by `factor` (at least 1 each)."""

    def __init__(self, factor: int) -> None:
        self.factor = factor
        self.changed: dict[str, tuple[int, int]] = {}

    def describe(self) -> str:
        changes = ", ".join(f"{name} {old}->{new}" for name, (old, new) in self.changed.items())
        return f"the file's size constants divided by {self.factor} ({changes})"

    def __call__(self, module: ModuleType) -> None:
        for name, value in list(vars(module).items()):
            if name.startswith("_") or isinstance(value, bool) or not isinstance(value, int):
                continue
            if value >= MIN_CONSTANT:
                new = max(1, value // self.factor if value % self.factor == 0 else round(value / self.factor))
                setattr(module, name, new)
                self.changed[name] = (value, new)


def small_inputs(
    args: tuple[Any, ...], kwargs: dict[str, Any], vocab: int
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Real inputs shaped like the full ones, with batch and token length cut down; ids below `vocab`."""

    def make(name: str, x: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            return x
        shape = list(x.shape)
        if shape:
            shape[0] = min(shape[0], SMALL_BATCH)
        if len(shape) == 2 and not x.is_floating_point():
            shape[1] = min(shape[1], SMALL_SEQ)
        if x.dtype == torch.bool or "mask" in name:
            return torch.ones(shape, dtype=x.dtype)
        if not x.is_floating_point():
            return torch.randint(0, max(vocab, 2), shape, dtype=x.dtype)
        return torch.randn(shape, dtype=x.dtype)

    return tuple(make("", a) for a in args), {k: make(k, v) for k, v in kwargs.items()}
