"""Run xprof's own converter (`xspace_to_tool_data`) on profiles, in a child process, for comparison.

xprof writes cache files beside its input and reuses them for any file in the same folder, so every
profile is copied into a fresh folder of its own first. The child keeps xprof's C++ logging and its
import out of the test process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.subprocess_support import run_text

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from xprof.convert.raw_to_tool_data import xspace_to_tool_data
imported = time.perf_counter() - t0
jobs = json.loads(sys.argv[1])
out = {"import_s": imported, "results": []}
for path, tools in jobs:
    result = {}
    for tool in tools:
        t = time.perf_counter()
        data, _ = xspace_to_tool_data([path], tool, {"use_saved_result": False})
        seconds = time.perf_counter() - t
        if isinstance(data, bytes):
            data = data.decode()
        result[tool] = {"seconds": seconds, "data": json.loads(data) if data else None}
    out["results"].append(result)
print(json.dumps(out))
"""


_CAPTURE = r"""
import sys
import jax
import jax.numpy as jnp

f = jax.jit(lambda a, b: jnp.tanh(a @ b).sum())
a = jnp.ones((256, 256))
f(a, a).block_until_ready()
with jax.profiler.trace(sys.argv[1]):
    for _ in range(5):
        f(a, a).block_until_ready()
"""


def capture_cpu_profile(folder: Path, timeout: float = 120.0) -> Path:
    """Capture a small jax.profiler trace on the CPU in a child process; the path of its *.xplane.pb."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run(
        [sys.executable, "-c", _CAPTURE, str(folder)],
        check=True,
        timeout=timeout,
        env=env,
        capture_output=True,
    )
    found = sorted(folder.rglob("*.xplane.pb"))
    if not found:
        raise RuntimeError(f"jax.profiler wrote no *.xplane.pb under {folder}")
    return found[0]


def op_profile_nodes(node: dict[str, Any], depth: int = 0) -> list[dict[str, Any]]:
    """op_profile's tree flattened: each node with its depth (0 root, 1 program, 2 category, 3 op)."""
    out = [dict(node, depth=depth)]
    for child in node.get("children", []):
        out += op_profile_nodes(child, depth + 1)
    return out


def xprof_available() -> bool:
    return importlib.util.find_spec("xprof") is not None


def run_quiet_python(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -c SCRIPT ARGS` from the checkout: JAX on the CPU, no metadata-server query, and TensorFlow's
    C++ logging (which xprof writes through) off; a non-zero exit is the caller's to report."""
    env = dict(os.environ, TPU_SKIP_MDS_QUERY="1", JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    return run_text([sys.executable, "-c", script, *args], env=env, timeout=timeout)


def run_xprof(jobs: list[tuple[Path, list[str]]], timeout: float = 120.0) -> list[dict[str, Any]]:
    """For each (profile, tools): xprof's tool outputs, decoded from JSON, each profile on a copy."""
    with tempfile.TemporaryDirectory(prefix="xprof-") as tmp:
        copies = []
        for index, (path, tools) in enumerate(jobs):
            folder = Path(tmp) / f"p{index}"
            folder.mkdir()
            copy = folder / path.name
            shutil.copyfile(path, copy)
            copies.append((str(copy), tools))
        proc = run_quiet_python(_CHILD, json.dumps(copies), timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"xprof child failed ({proc.returncode}): {proc.stderr[-2000:]}")
        results: list[dict[str, Any]] = json.loads(proc.stdout)["results"]
        return results


def table(tool_output: Any) -> list[dict[str, Any]]:
    """Rows of a Google-charts style data table (`{"cols": [...], "rows": [{"c": [{"v": ...}]}]}`)."""
    ids = [col["id"] for col in tool_output["cols"]]
    return [
        dict(zip(ids, [cell.get("v") if cell else None for cell in row["c"]], strict=False))
        for row in tool_output["rows"]
    ]


def percent(text: str) -> float:
    """xprof prints shares as strings like '86.5%'."""
    return float(text.rstrip("%"))
