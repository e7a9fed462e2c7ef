"""Bad input: the kernel raises before it builds its pallas_call."""

from __future__ import annotations

from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]


def kernel(x: jax.Array) -> jax.Array:
    if x.ndim == 2:
        raise ValueError("row-major layouts are not supported yet")
    return x


def reference(x: jax.Array) -> jax.Array:
    return x
