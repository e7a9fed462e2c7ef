"""Bad input: the kernel never returns (an endless loop while it builds the call)."""

from __future__ import annotations

import time
from typing import Any

import jax
from _inputs import one_matrix as make_inputs  # noqa: F401 (kernel check reads it)

SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 8, "cols": 128}]


def kernel(x: jax.Array) -> jax.Array:
    while True:
        time.sleep(0.05)


def reference(x: jax.Array) -> jax.Array:
    return x
