"""Process environment defaults that keep libtpu from hanging off a TPU VM.

libtpu asks the cloud metadata server about the host on first device use and retries for minutes when
there is none. Off a TPU VM we tell it not to ask, and keep JAX on the CPU.
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping


def _has_entry(folder: str, matches: Callable[[str], bool]) -> bool:
    try:
        return any(matches(name) for name in os.listdir(folder))
    except OSError:
        return False


def on_tpu_vm(dev: str = "/dev") -> bool:
    """A TPU VM exposes its chips as /dev/accel* (v2-v5e) or VFIO devices /dev/vfio/N (v5p and later).

    Listed with `os.listdir` rather than `glob`: every tpu-agent command runs this at start-up, and
    importing `glob` cost more than the check itself."""
    return _has_entry(dev, lambda name: name.startswith("accel")) or _has_entry(
        os.path.join(dev, "vfio"), lambda name: "0" <= name[:1] <= "9"
    )


def safe_defaults(tpu_vm: bool) -> dict[str, str]:
    """The variables we set when the user has not set them."""
    defaults = {"ANONYMIZED_TELEMETRY": "False", "HF_HUB_OFFLINE": "1"}
    if not tpu_vm:
        # libtpu also takes a host-wide lock file; off a TPU VM (compile-only work) two processes may share it
        defaults.update(
            {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}
        )
    return defaults


#: What `apply_safe_defaults` set in this process's own environment, so `tpu-agent doctor` can tell
#: the person's environment (which their other programs see) from the defaults tpu-agent added.
APPLIED: dict[str, str] = {}


def apply_safe_defaults(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each default the user has not set; return what was set."""
    env = os.environ if environ is None else environ
    applied: dict[str, str] = {}
    for key, value in safe_defaults(on_tpu_vm()).items():
        if key not in env:
            env[key] = value
            applied[key] = value
    if environ is None:
        APPLIED.update(applied)
    return applied


def users_environment() -> dict[str, str]:
    """This process's environment as the person set it, without the defaults tpu-agent applied."""
    return {k: v for k, v in os.environ.items() if not (k in APPLIED and APPLIED[k] == v)}
