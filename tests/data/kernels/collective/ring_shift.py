"""A collective kernel of our own: every device sends its shard to its right neighbour on a ring.

The global result is the input with its shards rotated one place down (shard d ends on device d + 1).
Each device first meets both neighbours on the barrier semaphore (a neighbour must be inside the kernel
before a DMA writes its output), then starts one remote DMA and waits for it to be sent and received.
`build` makes the planted-bug variants in this folder.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.sharding import PartitionSpec as P

__all__ = [
    "DEFAULTS",
    "DTYPES",
    "MESH",
    "SHAPES",
    "SPACE",
    "TARGET_SHAPE",
    "build",
    "kernel",
    "make_inputs",
    "reference",
]

MESH = {"x": 4}
SPACE: dict[str, list[Any]] = {}
DEFAULTS: dict[str, Any] = {}
SHAPES: list[dict[str, int]] = [{"rows": 32, "cols": 128}]
DTYPES: list[str] = ["float32"]
TARGET_SHAPE: dict[str, int] = {"rows": 2048, "cols": 1024}


def make_inputs(rng: np.random.Generator, shape: dict[str, int], dtype: str) -> tuple[jax.Array, ...]:
    return (jnp.asarray(rng.standard_normal((shape["rows"], shape["cols"]), np.float32), dtype),)


def _shift_body(x_hbm: Any, o_hbm: Any, send_sem: Any, recv_sem: Any, *, step: int, wait: bool) -> None:
    devices = lax.axis_size("x")
    me = lax.axis_index("x")
    target = lax.rem(me + step + devices, devices)
    barrier = pltpu.get_barrier_semaphore()
    for neighbour in (lax.rem(me + 1, devices), lax.rem(me + devices - 1, devices)):
        pl.semaphore_signal(barrier, 1, device_id=(neighbour,), device_id_type=pl.DeviceIdType.MESH)
    pl.semaphore_wait(barrier, 2)
    dma = pltpu.make_async_remote_copy(
        x_hbm, o_hbm, send_sem, recv_sem, device_id=(target,), device_id_type=pl.DeviceIdType.MESH
    )
    dma.start()
    if wait:
        dma.wait()


def build(step: int = 1, wait: bool = True) -> Any:
    """The kernel sending each shard `step` places along the ring, waiting for its DMA or not."""

    def shard_kernel(shard: jax.Array) -> jax.Array:
        return pl.pallas_call(
            functools.partial(_shift_body, step=step, wait=wait),
            out_shape=jax.ShapeDtypeStruct(shard.shape, shard.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec(memory_space=pl.ANY),
            scratch_shapes=[pltpu.SemaphoreType.DMA, pltpu.SemaphoreType.DMA],
            compiler_params=pltpu.CompilerParams(collective_id=0),
        )(shard)

    def kernel(x: jax.Array) -> jax.Array:
        mesh = jax.sharding.get_abstract_mesh()
        return jax.shard_map(shard_kernel, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)

    return kernel


kernel = build()


def reference(x: jax.Array) -> jax.Array:
    shard = x.shape[0] // MESH["x"]
    return jnp.roll(x, shard, axis=0)
