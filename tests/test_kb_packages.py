"""Installed packages' docstrings and Markdown docs, read without importing the packages."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tpu_runtime.knowledge.packages import _python_pieces, _torch_tpu_table, load_package_configs


def test_docstrings_signatures_constants_and_public_names() -> None:
    source = textwrap.dedent(
        '''
        """Module about launching."""
        FLAG_ENV = "TORCH_TPU_TOPOLOGY"
        OTHER = "not an env var"

        def launch(n: int, *, port: int = 1) -> None:
            """Start n workers on consecutive ports."""

        class Spec:
            def __init__(self, blocks: int):
                pass

        def _private():
            """Hidden helper with a long docstring here."""
        '''
    )
    aliases = {"pkg.mod.Spec": "pkg.public.Spec"}
    pieces = {p["symbol"]: p for p in _python_pieces(source, "pkg/mod.py", aliases, None)}
    assert "pkg.mod._private" not in pieces
    assert pieces["pkg.mod.launch"]["signature"].startswith("launch(n: int, *, port: int=1)")
    assert pieces["pkg.mod.launch"]["line"] == 6
    assert "FLAG_ENV = 'TORCH_TPU_TOPOLOGY' (line 3)" in pieces["pkg.mod"]["doc"]
    assert "not an env var" not in pieces["pkg.mod"]["doc"]
    # an undocumented public class still gets a passage naming its public name and constructor
    assert pieces["pkg.mod.Spec"]["public"] == "pkg.public.Spec"
    assert "__init__(self, blocks: int)" in pieces["pkg.mod.Spec"]["doc"]


def test_torch_tpu_public_table_is_read_from_source(tmp_path: Path) -> None:
    api = tmp_path / "public_api.py"
    api.write_text(
        textwrap.dedent(
            """
            _DEV = "pkg._internal.device"
            _TPU_DEVICE_CLASS = f"{_DEV}:TpuDeviceModule"
            def _tpu_attr(name):
                return name
            _PUBLIC_MODULES = {
                "torch.tpu": ModuleSpec(exports={"synchronize": _tpu_attr("synchronize")}),
                "torch.tpu.pallas": ModuleSpec(exports={"jax_op": "pkg._internal.pallas:jax_op"}),
            }
            """
        )
    )
    table = _torch_tpu_table(api)
    assert table["pkg._internal.pallas.jax_op"] == "torch.tpu.pallas.jax_op"
    assert table["pkg._internal.device.TpuDeviceModule.synchronize"] == "torch.tpu.synchronize"


@pytest.mark.slow
def test_installed_packages_are_indexed_without_being_imported() -> None:
    code = textwrap.dedent(
        """
        import sys
        from tpu_runtime.knowledge.packages import discover_packages
        specs, notes = discover_packages()
        units = {s.unit: s for s in specs}
        tpu = units["package:torch_tpu"].load().chunks
        jax_op = [c for c in tpu if c.symbol == "torch.tpu.pallas.jax_op"]
        print(len(jax_op) > 0, jax_op[0].path, jax_op[0].version, jax_op[0].url)
        print(sorted(units))
        print([m for m in ("torch_tpu", "jax", "torch", "xprof") if m in sys.modules])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, units, imported = done.stdout.strip().splitlines()
    assert first.startswith("True torch_tpu/_internal/pallas/pallas.py 0.2")
    assert first.endswith("https://google-pytorch.github.io/torch_tpu/")
    assert units == str(["package:jax", "package:torch", "package:torch_tpu", "package:xprof"])
    assert imported == "[]"


def test_shipped_package_list_parses() -> None:
    configs = {c.dist: c for c in load_package_configs()}
    assert {"torch_tpu", "jax", "xprof", "torch"} <= set(configs)
    assert configs["torch"].symbols == {"torch/__init__.py": ["compile"]}
