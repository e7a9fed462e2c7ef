"""Stage 5's deferred import: a deferred module runs on its first use, with the real contents."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tpu_runtime.kernels.torch_imports import deferred_inductor_passes


def _package(root: Path, marker: Path) -> None:
    pkg = root / "deferpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "heavy.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nVALUE = 42\n"
    )


@pytest.fixture
def tidy_modules() -> Iterator[None]:
    yield
    for name in ("deferpkg.heavy", "deferpkg"):
        sys.modules.pop(name, None)


@pytest.mark.usefixtures("tidy_modules")
def test_deferred_module_runs_on_first_use(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    _package(tmp_path, marker)
    monkeypatch.syspath_prepend(str(tmp_path))
    finders = list(sys.meta_path)
    with deferred_inductor_passes(frozenset({"deferpkg.heavy"})):
        from deferpkg import heavy
    assert sys.meta_path == finders
    assert not marker.exists()
    assert heavy.VALUE == 42
    assert marker.read_text() == "ran"


@pytest.mark.usefixtures("tidy_modules")
def test_other_modules_load_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    _package(tmp_path, marker)
    monkeypatch.syspath_prepend(str(tmp_path))
    with deferred_inductor_passes(frozenset({"somewhere.else"})):
        import deferpkg.heavy  # noqa: F401
    assert marker.read_text() == "ran"
