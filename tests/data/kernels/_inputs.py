"""Random inputs shared by the test kernels in this folder; not a kernel module itself (it declares no
convention names).

`kernel check` imports a kernel with its folder on sys.path, so a kernel here takes its `make_inputs` from
this module. Kernels that a test copies elsewhere on their own keep theirs: `axpy.py` (remote timing runs it
alone) and `ragged_reference.py` (copied to plant a broken reference).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def one_matrix(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    """`make_inputs` of a kernel taking one matrix: a standard-normal (rows, cols) array of `dtype`."""
    return (jnp.asarray(rng.standard_normal((shape["rows"], shape["cols"]), np.float32), dtype),)
