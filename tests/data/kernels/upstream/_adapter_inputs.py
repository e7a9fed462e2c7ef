"""Random inputs shared by the adapters in this folder; not an adapter itself (it declares no convention
names, and the corpus's test and benchmark skip files whose name starts with `_`).

`kernel check` imports an adapter with this folder on sys.path. The name differs from
`tests/data/kernels/_inputs.py` because one process may import kernels of both folders.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

MakeInputs = Callable[[np.random.Generator, dict[str, int], str], tuple[jax.Array, ...]]


def normal_arrays(count: int, *dims: str) -> MakeInputs:
    """`make_inputs` of a kernel taking `count` standard-normal arrays, each sized by the shape's `dims`."""

    def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
        sizes = tuple(shape[d] for d in dims)
        return tuple(jnp.asarray(rng.standard_normal(sizes, np.float32), dtype) for _ in range(count))

    return make_inputs


def key_and_template(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    """`make_inputs` of a random-bits kernel: a random 2-word uint32 key and a (rows, cols) uint32 array of
    zeros that only carries the output shape."""
    key = rng.integers(0, 2**32, size=2, dtype=np.uint64).astype(np.uint32)
    template = np.zeros((shape["rows"], shape["cols"]), np.uint32)
    return jnp.asarray(key), jnp.asarray(template)
