"""Bad input: the module imports a package that does not exist."""

from __future__ import annotations

import jax.numpy as jnp
import not_a_real_module_for_tpu_agent_tests  # noqa: F401

SHAPES = [{"n": 8}]


def make_inputs(rng, shape, dtype):  # type: ignore[no-untyped-def]
    return (jnp.zeros(shape["n"]),)


def kernel(x):  # type: ignore[no-untyped-def]
    return x


def reference(x):  # type: ignore[no-untyped-def]
    return x
