"""The environment the benchmarks measure under, in one place: off a TPU VM, offline, no telemetry.

`tpu_runtime` sets most of these itself when imported, but not `TORCH_DEVICE_BACKEND_AUTOLOAD`, and a
benchmark sets them before its first import so that every figure is taken under the same settings (and
passes them to the child processes it times). Imported by the scripts beside it, run as
`python benchmarks/NAME.py`.
"""

from __future__ import annotations

import os

QUIET_ENV = {
    "TPU_SKIP_MDS_QUERY": "1",
    "JAX_PLATFORMS": "cpu",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}
"""Variables a benchmark and its children run with, unless the person set them otherwise."""


def use_quiet_env() -> None:
    """Set each of `QUIET_ENV` in this process that the person has not set."""
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
