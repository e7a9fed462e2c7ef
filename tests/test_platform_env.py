from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tpu_runtime import platform_env


def test_off_tpu_vm_sets_metadata_skip_and_cpu_jax() -> None:
    env: dict[str, str] = {}
    applied = platform_env.apply_safe_defaults(env) if not platform_env.on_tpu_vm() else {}
    if platform_env.on_tpu_vm():
        pytest.skip("this machine is a TPU VM")
    assert env["TPU_SKIP_MDS_QUERY"] == "1"
    assert env["JAX_PLATFORMS"] == "cpu"
    assert applied["TPU_SKIP_MDS_QUERY"] == "1"


def test_user_settings_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform_env, "on_tpu_vm", lambda: False)
    env = {"JAX_PLATFORMS": "tpu", "TPU_SKIP_MDS_QUERY": "0"}
    applied = platform_env.apply_safe_defaults(env)
    assert env["JAX_PLATFORMS"] == "tpu" and env["TPU_SKIP_MDS_QUERY"] == "0"
    assert "JAX_PLATFORMS" not in applied


def test_on_a_tpu_vm_nothing_blocks_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform_env, "on_tpu_vm", lambda: True)
    env: dict[str, str] = {}
    platform_env.apply_safe_defaults(env)
    assert "TPU_SKIP_MDS_QUERY" not in env and "JAX_PLATFORMS" not in env


def test_importing_the_package_protects_a_bare_process() -> None:
    code = (
        "import os, tpu_runtime; print(os.environ.get('TPU_SKIP_MDS_QUERY'), os.environ.get('JAX_PLATFORMS'))"
    )
    env = {"PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    if platform_env.on_tpu_vm():
        pytest.skip("this machine is a TPU VM")
    assert done.stdout.split() == ["1", "cpu"]


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        ((), False),
        (("accel0",), True),
        (("vfio/0",), True),
        (("vfio/12",), True),
        (("vfio/vfio", "null", "xaccel"), False),
    ],
    ids=["bare", "accel", "vfio-group", "vfio-group-12", "vfio-control-only"],
)
def test_a_tpu_vm_is_told_by_its_device_files(
    tmp_path: Path, entries: tuple[str, ...], expected: bool
) -> None:
    """/dev/accel* (v2-v5e) or a numbered VFIO group (v5p and later) marks a TPU VM; the VFIO control
    file alone, present on any machine with the vfio module, does not."""
    for entry in entries:
        (tmp_path / entry).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / entry).touch()
    assert platform_env.on_tpu_vm(str(tmp_path)) is expected
