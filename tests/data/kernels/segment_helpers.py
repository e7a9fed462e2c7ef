"""Kernel body shared by `oob_in_helper.py`; not a kernel module itself (it declares no convention names).

Planted bug: the body reads `bounds_ref[i + 1]`, one past the end of the SMEM array on the last grid step.
"""

from typing import Any

import jax.numpy as jnp
from jax.experimental import pallas as pl


def scale_by_width(bounds_ref: Any, x_ref: Any, o_ref: Any) -> None:
    i = pl.program_id(0)
    width = bounds_ref[i + 1] - bounds_ref[i]
    o_ref[...] = x_ref[...] * width.astype(jnp.float32)
