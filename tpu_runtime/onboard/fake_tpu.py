"""The forward ops as TorchTPU itself routes them, without a TPU.

With torch_tpu installed, its device can be initialised on any host and fake tensors placed on it:
the dispatcher then takes the TPU path (e.g. `aten.linear` stays whole, attention goes to TorchTPU's
own kernel) while nothing executes. Backward on fake TPU tensors is not supported, so this is forward only.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import torch
from torch.utils._pytree import tree_map

from tpu_runtime.onboard.capture import Capture, SourceLocator, _ModuleTracker, _OpRecorder


def torch_tpu_available() -> bool:
    return importlib.util.find_spec("torch_tpu") is not None


def trace_on_fake_tpu(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], locator: SourceLocator
) -> tuple[Capture, str]:
    """Returns the capture and a note; a trace cut short by a data-dependent op says where."""
    import torch_tpu
    from torch._subclasses.fake_tensor import FakeTensorMode

    torch_tpu._loader._init_device("tpu")
    version = sys.modules["torch_tpu"].__dict__.get("__version__") or _dist_version()
    capture = Capture()
    fake = FakeTensorMode(allow_non_fake_inputs=True)
    was_training = model.training
    model.eval()
    try:
        with fake:
            state = {
                name: torch.empty_like(t, device="tpu")
                for name, t in [*model.named_parameters(), *model.named_buffers()]
            }

            def to_fake(x: Any) -> Any:
                return torch.empty_like(x, device="tpu") if isinstance(x, torch.Tensor) else x

            fargs, fkwargs = tree_map(to_fake, args), tree_map(to_fake, kwargs)
            with _ModuleTracker(model) as tracker, torch.no_grad(), _OpRecorder(capture, tracker, locator):
                torch.func.functional_call(model, state, fargs, fkwargs)
        note = f"forward traced on a fake TPU device with torch_tpu {version} (nothing ran on a TPU)"
    except Exception as exc:  # a data-dependent op cannot run on fake tensors; keep what was traced
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        note = (
            f"fake-TPU forward trace stopped early ({type(exc).__name__}: {first}); "
            f"{len(capture.ops)} ops traced before that"
        )
    finally:
        model.train(was_training)
    return capture, note


def _dist_version() -> str:
    from importlib.metadata import version

    return version("torch_tpu")
