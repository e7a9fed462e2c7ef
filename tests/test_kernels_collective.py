"""`kernel check` on multi-device (collective) kernels: a module declares `MESH`, the check child starts
JAX with that many host devices, interpret mode runs both DMA models, and lowering and compile use a
compile-only TPU topology of that many devices (`tpu_runtime.kernels.mesh`).

The kernels are our own ring shift (`tests/data/kernels/collective/`) and two planted bugs in copies of it:
a shard sent to the wrong neighbour, and a remote DMA nobody waits for. Each check runs in the sandboxed
child, as `tpu-agent kernel check` does, because this test process's JAX has one CPU device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.kernels.job import KernelCheckRequest, run_kernel_check
from tpu_runtime.kernels.mesh import HOST_DEVICES_FLAG, _grids, declared_mesh, with_host_devices
from tpu_runtime.kernels.report import KernelCheckReport, StageName, StageResult

COLLECTIVE = Path(__file__).resolve().parent / "data" / "kernels" / "collective"


def test_the_host_device_flag_keeps_the_users_other_xla_flags() -> None:
    flags = f"--xla_dump_to=xla_dump {HOST_DEVICES_FLAG}=2 --xla_cpu_enable_fast_math=false"
    assert with_host_devices(flags, 4).split() == [
        "--xla_dump_to=xla_dump",
        "--xla_cpu_enable_fast_math=false",
        f"{HOST_DEVICES_FLAG}=4",
    ]
    assert with_host_devices("", 8) == f"{HOST_DEVICES_FLAG}=8"


def test_the_child_environment_passes_the_users_xla_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_runtime.sandbox import child_env

    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=somewhere")
    assert child_env()["XLA_FLAGS"] == "--xla_dump_to=somewhere"


def test_mesh_is_read_without_importing_the_file(tmp_path: Path) -> None:
    literal = tmp_path / "literal.py"
    literal.write_text('raise SystemExit("never imported")\nMESH: dict[str, int] = {"x": 2, "y": 4}\n')
    assert declared_mesh(literal) == {"x": 2, "y": 4}
    computed = tmp_path / "computed.py"
    computed.write_text('import os\nMESH = {"x": int(os.environ.get("N", "4"))}\n')
    assert declared_mesh(computed) == {}
    assert declared_mesh(COLLECTIVE / "ring_shift.py") == {"x": 4}


def test_a_computed_mesh_is_refused_with_the_literal_form(tmp_path: Path) -> None:
    from tpu_runtime.kernels.convention import KernelModuleError, load_kernel_module

    source = (COLLECTIVE / "ring_shift.py").read_text().replace('MESH = {"x": 4}', 'MESH = {"x": 2 + 2}')
    (tmp_path / "computed_mesh.py").write_text(source)
    with pytest.raises(KernelModuleError, match="literal dict"):
        load_kernel_module(tmp_path / "computed_mesh.py")


def test_chip_grids_come_squarest_first() -> None:
    assert _grids(4, 2)[0] == (2, 2)
    assert _grids(4, 3)[0] == (2, 2, 1)
    assert all(a * b * c == 8 for a, b, c in _grids(8, 3))


def check(name: str, stages: list[StageName]) -> tuple[KernelCheckReport, dict[str, StageResult]]:
    request = KernelCheckRequest(
        file=COLLECTIVE / f"{name}.py", stages=stages, generations=["v5e"], seed=5, timeout_s=300
    )
    report = run_kernel_check(request)
    return report, {s.stage: s for s in report.stages}


@pytest.mark.slow
def test_a_correct_ring_shift_passes_in_both_dma_models_and_compiles_on_a_2x2_topology() -> None:
    report, stages = check("ring_shift", ["correctness", "lowering", "compile", "torch"])
    assert report.verdict == "pass"
    correctness = stages["correctness"]
    assert correctness.verdict == "pass", correctness.message
    assert "on 4 devices in both DMA modes" in correctness.cases[0].message
    assert stages["lowering"].verdict == "pass" and "v5e:2x2" in stages["lowering"].message
    assert stages["compile"].verdict == "pass", stages["compile"].message
    (v5e,) = stages["compile"].generations
    assert v5e.topology == "v5e:2x2" and "remote DMAs" in v5e.message
    assert stages["torch"].verdict == "skip" and "shard_map" in stages["torch"].message


@pytest.mark.slow
def test_a_shard_sent_to_the_wrong_neighbour_fails_in_both_dma_models() -> None:
    report, stages = check("ring_wrong_neighbour", ["correctness"])
    message = stages["correctness"].message
    assert report.verdict == "fail" and stages["correctness"].verdict == "fail", message
    assert "in eager DMA mode" in message and "also wrong in on_wait mode" in message
    assert "4096 of 4096 elements" in message


@pytest.mark.slow
def test_a_remote_dma_nobody_waits_for_fails() -> None:
    report, stages = check("ring_missing_wait", ["correctness"])
    message = stages["correctness"].message
    assert report.verdict == "fail" and stages["correctness"].verdict == "fail", message
    assert "ring_shift.py" in message and (".wait()" in message or "never written" in message), message
