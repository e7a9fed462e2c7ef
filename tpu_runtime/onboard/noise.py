"""The same random samples in every numerics run, so sampling is never read as a precision error.

A model that samples in forward (a VAE's `rsample()`, `torch.randn` noise, dropout called with
`training=True`) draws different numbers in float64, float32 and bfloat16 even from the same seed, and
the comparison would blame the precision for the difference. The float64 reference run records every
sample ATen's random ops produce (ops tagged `nondeterministic_seeded`), and each later run gets the same
samples back, in its own dtype, in the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch
from torch.utils._pytree import tree_flatten

from tpu_runtime.onboard.dispatch_mode import OpDispatchMode

aten = torch.ops.aten
_DROPOUT = aten.native_dropout.default


def _is_random(func: Any) -> bool:
    return torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


class NoiseTape(OpDispatchMode):
    """`mode="record"` keeps the samples of each random op; `mode="replay"` hands them back.

    `drawn` counts the random ops seen by name; `mismatch` is set when a replayed run asks for a sample
    the recording does not have (another count or shape): from then on its samples are its own.
    """

    def __init__(self, mode: Literal["record", "replay"], tape: list[list[torch.Tensor]] | None = None):
        super().__init__()
        self.mode = mode
        self.tape: list[list[torch.Tensor]] = tape if tape is not None else []
        self.position = 0
        self.drawn: Counter[str] = Counter()
        self.mismatch: str | None = None

    def on_op(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        if not _is_random(func):
            return func(*args, **kwargs)
        self.drawn[func._schema.name] += 1
        if func is _DROPOUT:
            return self._dropout(args, kwargs)
        out = func(*args, **kwargs)
        samples = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
        if self.mode == "record":
            self.tape.append([t.detach().clone() for t in samples])
        else:
            recorded = self._next(samples)
            if recorded is not None:
                with torch.no_grad():
                    for t, r in zip(samples, recorded, strict=True):
                        t.copy_(r.to(t.dtype))
        return out

    def _dropout(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """Replay dropout's mask, then apply it to this run's own input."""
        x = args[0]
        p = float(args[1] if len(args) > 1 else kwargs.get("p", 0.5))
        train = args[2] if len(args) > 2 else kwargs.get("train")
        out, mask = _DROPOUT(*args, **kwargs)
        if not train:
            return out, mask
        if self.mode == "record":
            self.tape.append([mask.detach().clone()])
            return out, mask
        recorded = self._next([mask])
        if recorded is None:
            return out, mask
        mask = recorded[0].to(mask.dtype)
        scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
        return x * mask * scale, mask

    def _next(self, samples: list[torch.Tensor]) -> list[torch.Tensor] | None:
        if self.mismatch is not None:
            return None
        if self.position >= len(self.tape):
            self.mismatch = f"random op {self.position + 1} was not in the float64 run"
            return None
        recorded = self.tape[self.position]
        self.position += 1
        if len(recorded) != len(samples) or any(
            r.shape != s.shape for r, s in zip(recorded, samples, strict=False)
        ):
            self.mismatch = f"random op {self.position} drew another shape than in the float64 run"
            return None
        return recorded
