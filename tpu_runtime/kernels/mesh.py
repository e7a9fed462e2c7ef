"""Multi-device (collective) kernels: the device mesh a kernel module declares (`MESH`), and its devices.

A module that declares `MESH = {"x": 4}` (mesh axis name -> size, in order) runs under shard_map over that
many devices. `kernel check` gives it such a mesh (axis types Auto) as JAX's current mesh (`jax.set_mesh`);
the kernel reads it with `jax.sharding.get_abstract_mesh()`, which works inside and outside `jax.jit`, and
passes the global arrays to shard_map, which shards them:

- interpret mode (stages 1-2): N host CPU devices. The host platform has one device unless
  `--xla_force_host_platform_device_count=N` is in XLA_FLAGS before JAX creates its CPU client, so the
  check child sets it (`prepare_host_devices`) from a static read of the file (`declared_mesh`), before
  anything imports JAX, keeping every other flag the user set.
- lowering and compile (stages 3-4): the devices of a compile-only TPU topology with N devices
  (`topology_with`), e.g. "v5e:2x2"; a TPU7x chip has two devices, so 4 devices are "tpu7x:2x1x1".
"""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tpu_runtime.errors import BadInput

HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"
_FLAG_RE = re.compile(re.escape(HOST_DEVICES_FLAG) + r"(=\S*)?")


class MeshError(BadInput, ValueError):
    """The mesh a kernel declares cannot be provided here; the message says why in one line."""


def declared_mesh(path: Path) -> dict[str, int]:
    """`MESH` of a kernel file read without importing it ({} when absent or not a literal dict).

    The import itself happens later, in the check child; this read only decides how many host devices
    that child must create before JAX starts. `convention.load_kernel_module` validates the real value.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        if isinstance(target, ast.Name) and target.id == "MESH" and value is not None:
            try:
                mesh = ast.literal_eval(value)
            except ValueError:
                return {}
            if isinstance(mesh, dict) and all(
                isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in mesh.items()
            ):
                return dict(mesh)
    return {}


def device_count(mesh: dict[str, int]) -> int:
    return math.prod(mesh.values()) if mesh else 1


def with_host_devices(flags: str, count: int) -> str:
    """XLA_FLAGS with the host device count set to `count`; every other flag is kept as it was."""
    kept = _FLAG_RE.sub("", flags).split()
    return " ".join([*kept, f"{HOST_DEVICES_FLAG}={count}"])


def prepare_host_devices(path: Path) -> int:
    """Before JAX is imported in this process: enough host CPU devices for the file's `MESH`.

    Returns the device count asked for (1 for a single-device kernel, which changes nothing).
    """
    count = device_count(declared_mesh(path))
    if count > 1:
        os.environ["XLA_FLAGS"] = with_host_devices(os.environ.get("XLA_FLAGS", ""), count)
    return count


def cpu_mesh(mesh: dict[str, int]) -> Any:
    """A `jax.sharding.Mesh` of the declared shape over this process's CPU devices."""
    import jax
    import numpy as np

    count = device_count(mesh)
    devices = jax.devices("cpu")
    if len(devices) < count:
        raise MeshError(
            f"MESH {mesh} needs {count} devices and this process has {len(devices)} CPU device(s): "
            f"JAX was started before {HOST_DEVICES_FLAG}={count} could be set (run it through "
            "`tpu-agent kernel check`, which sets it, or set XLA_FLAGS before importing jax)"
        )
    return jax.sharding.Mesh(np.array(devices[:count]).reshape(tuple(mesh.values())), tuple(mesh))


@contextlib.contextmanager
def current_mesh(mesh: Any) -> Iterator[None]:
    """`mesh` as JAX's current mesh (a no-op for None: single-device kernels)."""
    if mesh is None:
        yield
        return
    import jax

    with jax.set_mesh(mesh):
        yield


def _grids(chips: int, dims: int) -> list[tuple[int, ...]]:
    """Chip grids with `chips` chips in `dims` dimensions, squarest first (2x2 before 4x1)."""
    found: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], left: int) -> None:
        if len(prefix) == dims - 1:
            found.append((*prefix, left))
            return
        for size in range(1, left + 1):
            if left % size == 0:
                extend((*prefix, size), left // size)

    extend((), chips)
    return sorted(set(found), key=lambda grid: (max(grid) - min(grid), tuple(-g for g in grid)))


@functools.cache
def topology_with(generation: str, count: int) -> tuple[str, tuple[Any, ...]]:
    """(topology name, its compile-only devices) for a `generation` topology of exactly `count` devices."""
    from jax.experimental import topologies

    from tpu_runtime.kernels.topology import prepare_libtpu, topology_for

    prepare_libtpu()
    name, single = topology_for(generation)
    dims = single.split(":")[1].count("x") + 1
    per_chip = len(topologies.get_topology_desc(single, "tpu").devices)
    if count % per_chip:
        raise MeshError(f"a {name} chip has {per_chip} devices: {count} devices are not whole chips")
    tried: list[str] = []
    for grid in _grids(count // per_chip, dims):
        topology = f"{name}:{'x'.join(map(str, grid))}"
        try:
            devices = tuple(topologies.get_topology_desc(topology, "tpu").devices)
        except Exception as exc:  # libtpu rejects shapes it does not build; try the next grid
            tried.append(f"{topology}: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}")
            continue
        if len(devices) == count:
            return topology, devices
        tried.append(f"{topology}: {len(devices)} devices")
    raise MeshError(f"libtpu has no compile-only {name} topology of {count} devices ({'; '.join(tried)})")


def topology_mesh(generation: str, mesh: dict[str, int]) -> tuple[str, Any]:
    """(topology name, a Mesh of the declared shape over its compile-only TPU devices)."""
    import jax
    import numpy as np

    topology, devices = topology_with(generation, device_count(mesh))
    grid = np.array(devices, dtype=object).reshape(tuple(mesh.values()))
    return topology, jax.sharding.Mesh(grid, tuple(mesh))
