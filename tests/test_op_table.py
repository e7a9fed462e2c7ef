"""TorchTPU's op table: the shipped snapshot, loading without torch_tpu, generation and refresh."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tpu_runtime.onboard import op_table as ot
from tpu_runtime.onboard.op_table import (
    OpTable,
    OpTableError,
    classify_line,
    is_autograd_override,
    load_op_table,
    refresh_op_table,
)

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "tpu_runtime" / "data" / "op_tables" / "torch_tpu-0.2.0_torch-2.13.0.json"
HAS_TORCH_TPU = importlib.util.find_spec("torch_tpu") is not None
needs_torch_tpu = pytest.mark.skipif(not HAS_TORCH_TPU, reason="torch_tpu is not installed (the 'tpu' extra)")

SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(SAFE_ENV)
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.fixture(scope="module")
def snapshot() -> OpTable:
    return OpTable.read(SNAPSHOT, source="snapshot")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[OpTable, float]:
    """The installed table, generated once in a child process, and the seconds the child reported
    for importing torch_tpu and reading the dispatcher."""
    if not HAS_TORCH_TPU:
        pytest.skip("torch_tpu is not installed (the 'tpu' extra)")
    out = tmp_path_factory.mktemp("gen") / "table.json"
    proc = subprocess.run(
        [sys.executable, "-m", "tpu_runtime.onboard.op_table", "--out", str(out)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = re.search(r"\(([0-9.]+) s\)", proc.stderr)
    assert m, proc.stderr[-2000:]
    return OpTable.read(out), float(m.group(1))


# --- the snapshot ----------------------------------------------------------------------------------


def test_snapshot_is_compact_and_keyed(snapshot: OpTable) -> None:
    assert SNAPSHOT.stat().st_size < 200_000
    raw = json.loads(SNAPSHOT.read_text())
    assert raw["torch_tpu"] == "0.2.0" and raw["torch"] == "2.13.0"
    for names in raw["ops"].values():
        assert names == sorted(names)
    assert snapshot.torch_tpu_version == "0.2.0" and snapshot.torch_version == "2.13.0"


def test_snapshot_counts_match_the_measured_table(snapshot: OpTable) -> None:
    counts = snapshot.counts("aten")
    assert counts["tpu_kernel"] == 674
    assert counts["tpu_fallback"] == 402
    assert counts["autograd_override"] == 17
    assert len(snapshot.ops) > 3000


def test_snapshot_known_entries(snapshot: OpTable) -> None:
    e = snapshot.ops
    assert e["aten::addmm"].kind == "structured_out" and e["aten::addmm"].target == "aten::addmm.out"
    assert e["aten::addmm.out"].kind == "tpu_kernel"
    assert e["aten::cumsum"].target == "aten::cumsum.out"
    assert e["aten::sort"].kind == "composite_explicit"
    assert e["aten::linear"].kind == "tpu_kernel" and e["aten::linear"].autograd_override
    assert e["aten::scaled_dot_product_attention"].kind == "composite_implicit"
    assert e["aten::_scaled_dot_product_flash_attention_for_cpu"].kind == "tpu_fallback"
    assert e["aten::_scaled_dot_product_fused_attention_overrideable"].kind == "tpu_kernel"
    assert e["aten::nansum"].kind == "tpu_fallback"
    assert e["prims::add"].kind == "python_kernel"


def test_compact_round_trip(snapshot: OpTable) -> None:
    again = OpTable.from_compact(json.loads(snapshot.dumps()))
    assert again.ops == snapshot.ops
    assert again.generated_at == snapshot.generated_at


# --- classifying dispatcher lines ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("PrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:364 [kernel]", "tpu_kernel"),
        ("PrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:1149 [backend fallback]", "tpu_fallback"),
        (
            "PrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:99999 [backend fallback]",
            "tpu_fallback",
        ),
        (
            "PrivateUse1: registered at /__w/pytorch/pytorch/build/aten/src/ATen/"
            "RegisterCompositeImplicitAutograd_0.cpp:2144 [math kernel]",
            "composite_implicit",
        ),
        (
            "PrivateUse1: registered at /__w/pytorch/pytorch/build/aten/src/ATen/"
            "RegisterCompositeExplicitAutogradNonFunctional_0.cpp:7191 [default backend kernel]",
            "structured_out",
        ),
        (
            "PrivateUse1: registered at /__w/pytorch/pytorch/build/aten/src/ATen/"
            "RegisterCompositeExplicitAutograd_0.cpp:22723 [default backend kernel]",
            "composite_explicit",
        ),
        (
            "PrivateUse1: registered at /x/site-packages/torch/_library/custom_ops.py:1104 "
            "[default backend kernel]",
            "python_kernel",
        ),
        ("PrivateUse1: registered at /__w/pytorch/pytorch/aten/src/ATen/X.cpp:3 [backend fallback]", "none"),
        ("not a dispatcher line", "none"),
    ],
)
def test_classify_line(line: str, kind: str) -> None:
    assert classify_line(line, ("/x/site-packages/torch",)) == kind


def test_sparse_fallback_line_is_not_the_privateuse1_line() -> None:
    text = (
        "PrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:364 [kernel]\n"
        "SparsePrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:1168 [backend fallback]\n"
        "AutogradPrivateUse1: fallthrough registered at csrc/eager/tpu_aten_kernels.cc:1220 "
        "[backend fallback]\n"
    )
    pu1, ag = ot.dispatch_lines(text)
    assert pu1 is not None and classify_line(pu1) == "tpu_kernel"
    assert ag is not None and not is_autograd_override(ag)
    assert is_autograd_override(
        "AutogradPrivateUse1: registered at csrc/eager/tpu_aten_kernels.cc:1225 [kernel]"
    )
    assert not is_autograd_override(
        "AutogradPrivateUse1: registered at /__w/pytorch/pytorch/torch/csrc/autograd/generated/"
        "VariableType_2.cpp:10455 [autograd kernel]"
    )


# --- loading without torch_tpu ---------------------------------------------------------------------


def test_load_does_not_import_torch_tpu() -> None:
    code = (
        "import sys\n"
        "from tpu_runtime.onboard.op_table import load_op_table\n"
        "from tpu_runtime.onboard.coverage import classify\n"
        "t = load_op_table()\n"
        "print(classify('aten::addmm', t).status)\n"
        "assert 'torch_tpu' not in sys.modules, 'torch_tpu was imported'\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print(t.source)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(TORCH_DEVICE_BACKEND_AUTOLOAD="0", TPU_AGENT_DATA_DIR="/nonexistent-tpu-agent"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.split("\n")
    assert lines[0] == "supported"
    assert "torch_tpu 0.2.0" in lines[1]


def test_load_prefers_matching_snapshot(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(ot, "installed_versions", lambda: ("0.2.0", "2.13.0"))
    table = load_op_table()
    assert table.source == "snapshot torch_tpu 0.2.0 / torch 2.13.0"
    assert table.note is None


def test_load_falls_back_to_newest_snapshot_with_note(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(ot, "installed_versions", lambda: ("0.9.1", "2.15.0"))
    table = load_op_table()
    assert table.torch_tpu_version == "0.2.0"
    assert table.note and "0.9.1" in table.note and "differ" in table.note
    monkeypatch.setattr(ot, "installed_versions", lambda: (None, "2.13.0"))
    table = load_op_table()
    assert table.note and "not installed" in table.note


def test_corrupt_refreshed_table_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(ot, "installed_versions", lambda: ("0.2.0", "2.13.0"))
    bad = tmp_path / "op_tables" / "torch_tpu-0.2.0_torch-2.13.0.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    table = load_op_table()
    assert table.source == "snapshot torch_tpu 0.2.0 / torch 2.13.0"
    assert table.note and "ignored the refreshed table" in table.note


def test_load_prefers_user_refreshed_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, snapshot: OpTable
) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(ot, "installed_versions", lambda: ("0.2.0", "2.13.0"))
    mine = snapshot.model_copy(deep=True)
    mine.ops["aten::nansum"] = ot.OpEntry(kind="tpu_kernel")
    mine.save(tmp_path / "op_tables" / "torch_tpu-0.2.0_torch-2.13.0.json")
    table = load_op_table()
    assert table.source.startswith("refreshed from installed torch_tpu 0.2.0")
    assert table.ops["aten::nansum"].kind == "tpu_kernel"
    assert load_op_table(prefer_installed=False).ops["aten::nansum"].kind == "tpu_fallback"


def test_data_dir_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    assert ot.user_table_dir() == tmp_path / "op_tables"
    monkeypatch.delenv("TPU_AGENT_DATA_DIR")
    assert ot.data_dir().name == "tpu-agent"


def test_refresh_without_torch_tpu_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        ot.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch_tpu" else real_find_spec(name, *a),
    )
    with pytest.raises(OpTableError, match=r"pip install 'tpu-agent\[tpu\]'"):
        refresh_op_table()


# --- generation (needs torch_tpu) ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.needs_torch_tpu
@needs_torch_tpu
def test_generated_table_agrees_with_snapshot(generated: tuple[OpTable, float], snapshot: OpTable) -> None:
    table, _ = generated
    if (table.torch_tpu_version, table.torch_version) != ("0.2.0", "2.13.0"):
        pytest.skip(f"installed {table.label} is not the snapshot's versions")
    assert table.ops == snapshot.ops


@pytest.mark.slow
@pytest.mark.needs_torch_tpu
@needs_torch_tpu
def test_generation_reads_the_whole_dispatcher_table(generated: tuple[OpTable, float]) -> None:
    table, _ = generated  # how long it takes is a benchmark figure, not a test (it varies with load)
    assert len(table.ops) > 3000


@pytest.mark.slow
@pytest.mark.needs_torch_tpu
@needs_torch_tpu
def test_refresh_writes_user_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, snapshot: OpTable
) -> None:
    monkeypatch.setenv("TPU_AGENT_DATA_DIR", str(tmp_path))
    path = refresh_op_table()
    assert path.parent == tmp_path / "op_tables" and path.is_file()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".refresh-")]
    refreshed = OpTable.read(path)
    assert refreshed.counts()["tpu_kernel"] > 600
    table = load_op_table()
    assert table.source.startswith("refreshed from installed torch_tpu")
