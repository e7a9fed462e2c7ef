"""The base of onboarding's torch dispatch modes (noise replay, matmul-precision emulation).

Torch calls `__torch_dispatch__` with `kwargs=None` when an op has no keyword arguments; every mode here
wants a dict it can read and pass on, so the base makes it once and hands the op to `on_op`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torch.utils._python_dispatch import TorchDispatchMode


class OpDispatchMode(TorchDispatchMode):
    """A dispatch mode whose `on_op` sees each op's keyword arguments as a dict."""

    def __torch_dispatch__(
        self,
        func: Any,
        types: Sequence[type],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        return self.on_op(func, args, dict(kwargs or {}))

    def on_op(self, func: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """Run one op (`func(*args, **kwargs)`), or what the mode puts in its place."""
        raise NotImplementedError
