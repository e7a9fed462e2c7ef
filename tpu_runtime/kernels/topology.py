"""Compile-only TPU devices on a machine without a TPU: topology names, libtpu's environment, and the
default-device switch Mosaic needs while tracing.

A leaf of `tpu_runtime.kernels` (no other kernels module imports at load time): the mesh, lowering,
compile and PyTorch stages all use it without importing one another.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

__all__ = ["compile_device", "prepare_libtpu", "topology_for", "tpu_default_device"]


#: Generations whose topology names have three dimensions.
_THREE_D = ("v4", "v5p", "tpu7x")


def topology_for(generation: str) -> tuple[str, str]:
    """(canonical generation, single-chip topology), e.g. 'v6e' -> ('v6e', 'v6e:1x1')."""
    from tpu_runtime.chips import get_chip

    name = get_chip(generation).name
    return name, f"{name}:{'1x1x1' if name in _THREE_D else '1x1'}"


def prepare_libtpu() -> None:
    """Before libtpu loads off a TPU VM: no metadata-server query, no host-wide libtpu lock."""
    from tpu_runtime.platform_env import apply_safe_defaults, on_tpu_vm

    apply_safe_defaults()
    if not on_tpu_vm():
        os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")


@functools.cache
def compile_device(topology: str) -> Any:
    prepare_libtpu()
    from jax.experimental import topologies

    return topologies.get_topology_desc(topology, "tpu").devices[0]


@contextlib.contextmanager
def tpu_default_device(generation: str) -> Iterator[Any]:
    """Make a compile-only TPU device of `generation` JAX's default device while tracing for TPU.

    Mosaic and kernels ask the default device for the TPU generation (`pltpu.get_tpu_info()`); off a TPU VM
    that device is the CPU and they fail with "Unsupported TPU device kind: cpu", which says nothing about
    the kernel. Yields the device.
    """
    import jax

    device = compile_device(topology_for(generation)[1])
    with jax.default_device(device):
        yield device
