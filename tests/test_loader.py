"""Each loading convention, tried in order, and inputs of every shape."""

from __future__ import annotations

import ast
import typing
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tests.conftest import REPO
from tpu_runtime.onboard.loader import CONVENTIONS, ModelLoadError, load_model


def test_get_model_and_get_inputs(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        def get_model(): return torch.nn.Linear(3, 4)
        def get_inputs(): return (torch.ones(2, 3),)
        """
    )
    loaded = load_model(path)
    assert loaded.convention == CONVENTIONS[0]
    assert isinstance(loaded.model, torch.nn.Linear) and loaded.args[0].shape == (2, 3)
    assert loaded.make_inputs is not None


def test_module_level_model_and_dict_inputs(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        class M(torch.nn.Module):
            def forward(self, input_ids, scale=1.0):
                return input_ids.float() * scale
        model = M()
        example_inputs = {"input_ids": torch.ones(2, 5, dtype=torch.long), "scale": 2.0}
        """
    )
    loaded = load_model(path)
    assert loaded.convention == CONVENTIONS[1]
    assert loaded.args == () and set(loaded.kwargs) == {"input_ids", "scale"}


def test_kernelbench_style(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        class Model(torch.nn.Module):
            def __init__(self, n, m):
                super().__init__()
                self.lin = torch.nn.Linear(n, m)
            def forward(self, x):
                return self.lin(x)
        def get_inputs(): return [torch.ones(4, 8)]
        def get_init_inputs(): return [8, 16]
        """
    )
    loaded = load_model(path)
    assert loaded.convention == CONVENTIONS[2]
    assert loaded.model(*loaded.args).shape == (4, 16)


def test_first_convention_wins(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        model = torch.nn.Identity(); example_inputs = (torch.ones(1),)
        def get_model(): return torch.nn.Linear(1, 1)
        def get_inputs(): return (torch.ones(1, 1),)
        """
    )
    assert isinstance(load_model(path).model, torch.nn.Linear)


def test_entry_point(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        def build():
            return torch.nn.Tanh(), torch.ones(3)
        """
    )
    loaded = load_model(path, entry="model:build")
    assert isinstance(loaded.model, torch.nn.Tanh) and loaded.args[0].shape == (3,)
    with pytest.raises(ModelLoadError, match="no attribute"):
        load_model(path, entry="model:nope")
    with pytest.raises(ModelLoadError, match="module:callable"):
        load_model(path, entry="build")


def test_not_a_module(write_model: Callable[..., Path]) -> None:
    path = write_model("def get_model(): return 3\ndef get_inputs(): return ()\n")
    with pytest.raises(ModelLoadError, match=r"not a torch\.nn\.Module"):
        load_model(path)


def test_sibling_imports_work(write_model: Callable[..., Path]) -> None:
    write_model(
        "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x): return x + 1\n", "layers.py"
    )
    path = write_model(
        """
        import torch
        from layers import Net
        def get_model(): return Net()
        def get_inputs(): return (torch.zeros(2),)
        """
    )
    loaded = load_model(path)
    assert loaded.model(*loaded.args).tolist() == [1.0, 1.0]


def test_the_loader_stands_alone_for_the_tpu_vm() -> None:
    """loader.py is uploaded by itself for the device check: it may import torch, never tpu_runtime."""
    source = (REPO / "tpu_runtime" / "onboard" / "loader.py").read_text()
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert "tpu_runtime" not in imported, imported
    from tpu_runtime.onboard import loader, report

    assert typing.get_args(loader.InputStyle) == typing.get_args(report.InputStyle)
