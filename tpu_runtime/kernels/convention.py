"""Load a kernel module and check that it follows the convention (see `tpu_runtime.kernels`).

Runs in the child process that executes the user's kernel code: importing the file runs it. Every problem
with the file itself (it does not import, a required name is missing or has the wrong type) raises
`KernelModuleError`, whose one-line message names the file, the name and what to write instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from tpu_runtime.errors import BadInput
from tpu_runtime.gc_pause import gc_paused

REQUIRED_FUNCTIONS = ("kernel", "reference", "make_inputs")
KNOWN_DTYPES = (
    "float32",
    "bfloat16",
    "float16",
    "int8",
    "int32",
    "uint8",
    "uint32",
    "float8_e4m3fn",
    "float8_e5m2",
)

#: Short form of the convention, printed by `tpu-agent kernel new` and in error messages.
CONVENTION_SUMMARY = """\
A kernel module defines:
  kernel(*inputs, **params)       the Pallas TPU kernel (calls pl.pallas_call; arrays annotated jax.Array)
  reference(*inputs)              the same computation in plain jax.numpy (run on float64 copies)
  make_inputs(rng, shape, dtype)  random inputs for one shape dict and dtype name; rng is a freshly
                                  seeded numpy.random.Generator (never return zeros or constants)
  SHAPES                          list of shape dicts checked in TPU interpret mode (keep them small)
  DTYPES                          dtype names each shape is checked with (default ["float32"])
  TARGET_SHAPE                    the production shape compiled for TPU and estimated (default SHAPES[-1])
  SPACE                           {param: [values]} that `kernel tune` may try
  DEFAULTS                        {param: value} that `kernel check` uses and `kernel tune` compares against
  TOLERANCE (optional)            {dtype: [rtol, atol as a fraction of the output RMS]}
  MESH (optional, collectives)    {axis name: size}, a literal dict: kernel() runs shard_map over that
                                  mesh, read with jax.sharding.get_abstract_mesh(); its inputs and outputs
                                  are the global (unsharded) arrays"""


class KernelModuleError(BadInput):
    """The kernel file cannot be used; the message is one line. `failure_kind` tells the sandbox."""

    failure_kind = "bad_input"

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.one_line = message
        self.detail = detail


@dataclass
class KernelModule:
    """A loaded kernel module and its declarations, validated."""

    path: Path
    module: ModuleType
    kernel: Callable[..., Any]
    reference: Callable[..., Any]
    make_inputs: Callable[..., Any]
    shapes: list[dict[str, int]]
    dtypes: list[str]
    target_shape: dict[str, int]
    space: dict[str, list[Any]]
    defaults: dict[str, Any]
    tolerance: dict[str, tuple[float, float]] = field(default_factory=dict)
    mesh: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def devices(self) -> int:
        """How many devices the kernel runs on (1 unless it declares a MESH)."""
        return math.prod(self.mesh.values()) if self.mesh else 1

    def params(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        """DEFAULTS with `overrides` applied; unknown names are an error."""
        merged = dict(self.defaults)
        for key, value in (overrides or {}).items():
            if key not in self.kernel_parameters():
                known = ", ".join(sorted(self.kernel_parameters())) or "none"
                raise KernelModuleError(
                    f"{self.path.name}: kernel() has no parameter {key!r} (its keyword parameters: {known})"
                )
            merged[key] = value
        return merged

    def kernel_parameters(self) -> set[str]:
        signature = inspect.signature(self.kernel)
        return {
            name
            for name, p in signature.parameters.items()
            if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            and p.default is not inspect.Parameter.empty
        }


def module_name_for(path: Path) -> str:
    """A unique, stable module name per file, so two kernels named `kernel.py` do not collide."""
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:10]
    return f"tpu_agent_kernel_{path.stem}_{digest}"


def import_kernel_file(path: Path) -> ModuleType:
    """Import the file as a module (its folder goes on sys.path so sibling imports work)."""
    if not path.is_file():
        raise KernelModuleError(f"no such kernel file: {path}")
    if path.suffix != ".py":
        raise KernelModuleError(f"{path.name}: a kernel module must be a .py file")
    name = module_name_for(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelModuleError(f"{path.name}: Python cannot load this file as a module")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[name] = module
    try:
        with gc_paused():  # the file imports jax: its objects are walked once, after the import
            spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        where = _line_in(path, exc)
        first = (str(exc).strip().splitlines() or [""])[0]
        raise KernelModuleError(
            f"cannot import {path.name}{where}: {type(exc).__name__}: {first}".rstrip(": "),
            traceback.format_exc(),
        ) from None
    return module


def _line_in(path: Path, exc: BaseException) -> str:
    """' (line N)' for the deepest frame of `exc` inside `path`, or the syntax error's line."""
    if isinstance(exc, SyntaxError) and exc.lineno:
        return f" (line {exc.lineno})"
    resolved = str(path.resolve())
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == resolved or frame.filename == str(path):
            line = frame.lineno
    return f" (line {line})" if line else ""


def load_kernel_module(path: Path) -> KernelModule:
    """Import `path` and validate every declaration the convention asks for."""
    module = import_kernel_file(path)
    where = path.name
    functions: dict[str, Callable[..., Any]] = {}
    for name in REQUIRED_FUNCTIONS:
        value = getattr(module, name, None)
        if value is None:
            hint = {
                "reference": "a plain jax.numpy function with the same array arguments as kernel()",
                "kernel": "the function that calls pl.pallas_call",
                "make_inputs": "make_inputs(key, shape, dtype) returning a tuple of random arrays",
            }[name]
            raise KernelModuleError(f"{where} has no `{name}` function: add {hint}")
        if not callable(value):
            raise KernelModuleError(f"{where}: `{name}` must be a function, got {type(value).__name__}")
        functions[name] = value
    shapes = _shapes(module, where)
    dtypes = _dtypes(module, where)
    target = _shape_dict(getattr(module, "TARGET_SHAPE", shapes[-1]), where, "TARGET_SHAPE")
    space = _space(module, where)
    defaults = getattr(module, "DEFAULTS", {})
    if not isinstance(defaults, dict) or not all(isinstance(k, str) for k in defaults):
        raise KernelModuleError(f"{where}: DEFAULTS must be a dict of parameter name -> value")
    km = KernelModule(
        path=path,
        module=module,
        kernel=functions["kernel"],
        reference=functions["reference"],
        make_inputs=functions["make_inputs"],
        shapes=shapes,
        dtypes=dtypes,
        target_shape=target,
        space=space,
        defaults=dict(defaults),
        tolerance=_tolerance(module, where),
        mesh=_mesh(module, where),
    )
    accepted = km.kernel_parameters()
    for name in [*defaults, *space]:
        if name not in accepted:
            raise KernelModuleError(
                f"{where}: parameter {name!r} (in DEFAULTS or SPACE) is not a keyword parameter with a "
                f"default of kernel(); kernel() accepts: {', '.join(sorted(accepted)) or 'none'}"
            )
    return km


def _shape_dict(value: Any, where: str, label: str) -> dict[str, int]:
    if not isinstance(value, dict) or not value:
        raise KernelModuleError(f"{where}: {label} must be a non-empty dict such as {{'m': 256, 'k': 512}}")
    for key, dim in value.items():
        if not isinstance(key, str) or isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise KernelModuleError(f"{where}: {label} entry {key!r}: {dim!r} must map a name to an int >= 1")
    return dict(value)


def _shapes(module: ModuleType, where: str) -> list[dict[str, int]]:
    shapes = getattr(module, "SHAPES", None)
    if not isinstance(shapes, (list, tuple)) or not shapes:
        raise KernelModuleError(
            f"{where}: SHAPES must be a non-empty list of shape dicts, e.g. [{{'m': 256}}]"
        )
    return [_shape_dict(s, where, "SHAPES") for s in shapes]


def _dtypes(module: ModuleType, where: str) -> list[str]:
    dtypes = getattr(module, "DTYPES", ["float32"])
    if not isinstance(dtypes, (list, tuple)) or not dtypes or not all(isinstance(d, str) for d in dtypes):
        raise KernelModuleError(f"{where}: DTYPES must be a non-empty list of dtype names, e.g. ['bfloat16']")
    for name in dtypes:
        if name not in KNOWN_DTYPES:
            raise KernelModuleError(
                f"{where}: unknown dtype {name!r} in DTYPES; use one of {', '.join(KNOWN_DTYPES)}"
            )
    return list(dtypes)


def _space(module: ModuleType, where: str) -> dict[str, list[Any]]:
    space = getattr(module, "SPACE", {})
    if not isinstance(space, dict):
        raise KernelModuleError(f"{where}: SPACE must be a dict of parameter name -> list of values")
    for key, values in space.items():
        if not isinstance(values, (list, tuple)) or not values:
            raise KernelModuleError(f"{where}: SPACE[{key!r}] must be a non-empty list of values")
    return {str(k): list(v) for k, v in space.items()}


def _tolerance(module: ModuleType, where: str) -> dict[str, tuple[float, float]]:
    raw = getattr(module, "TOLERANCE", {})
    if not isinstance(raw, dict):
        raise KernelModuleError(f"{where}: TOLERANCE must be a dict of dtype name -> [rtol, atol]")
    out: dict[str, tuple[float, float]] = {}
    for key, pair in raw.items():
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise KernelModuleError(f"{where}: TOLERANCE[{key!r}] must be [rtol, atol]")
        out[str(key)] = (float(pair[0]), float(pair[1]))
    return out


def _mesh(module: ModuleType, where: str) -> dict[str, int]:
    raw = getattr(module, "MESH", {})
    example = "e.g. MESH = {'x': 4} (mesh axis name -> number of devices)"
    if not isinstance(raw, dict):
        raise KernelModuleError(f"{where}: MESH must be a literal dict, {example}")
    for key, size in raw.items():
        if not isinstance(key, str) or isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise KernelModuleError(
                f"{where}: MESH entry {key!r}: {size!r} must map an axis name to an int >= 1"
            )
    from tpu_runtime.kernels.mesh import declared_mesh

    if raw and declared_mesh(Path(module.__file__ or "")) != raw:
        raise KernelModuleError(
            f"{where}: write MESH as a literal dict at module level, {example}: the checker reads it "
            "before importing the file, to start JAX with that many host devices"
        )
    return dict(raw)
