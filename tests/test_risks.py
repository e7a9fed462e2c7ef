"""Recompile and host-sync risks found in captured op records."""

from __future__ import annotations

import pytest

from tpu_runtime.onboard.capture_types import RawOp
from tpu_runtime.onboard.risks import find_risks, is_sparse_op, looks_like_mask_index


def _op(op: str, text: str = "", source: str = "model.py:10", module: str = "encoder.layer0") -> RawOp:
    return RawOp(op=op, phase="forward", count=1, module=module, source=source, source_text=text)


def _ops_on_lines(cases: list[tuple[str, str]], step: int) -> list[RawOp]:
    """One record per (op, source text), the n-th at line 10 + n * step of model.py."""
    return [_op(op, text, source=f"model.py:{10 + n * step}") for n, (op, text) in enumerate(cases)]


def test_dynamic_shape_ops() -> None:
    risks = find_risks(
        _ops_on_lines(
            [
                ("aten::nonzero", "idx = torch.nonzero(x)"),
                ("aten::_unique2", "u = torch.unique(labels)"),
                ("aten::unique_dim", "u = torch.unique(x, dim=0)"),
                ("aten::unique_consecutive", "torch.unique_consecutive(x)"),
                ("aten::masked_select", "torch.masked_select(x, m)"),
                ("aten::repeat_interleave.Tensor", "x.repeat_interleave(r)"),
                ("aten::nonzero_static", "torch.nonzero_static(x, size=4)"),
            ],
            step=1,
        )
    )
    by_op = {r.op: r for r in risks}
    assert set(by_op) == {
        "aten::nonzero",
        "aten::_unique2",
        "aten::unique_dim",
        "aten::unique_consecutive",
        "aten::masked_select",
        "aten::repeat_interleave.Tensor",
    }
    assert all(r.kind == "dynamic_shape" for r in risks)
    assert "nonzero_static" in by_op["aten::nonzero"].detail
    assert (
        by_op["aten::nonzero"].module == "encoder.layer0" and by_op["aten::nonzero"].source == "model.py:10"
    )
    assert "output_size" in by_op["aten::repeat_interleave.Tensor"].detail


def test_boolean_mask_indexing() -> None:
    risks = find_risks(
        _ops_on_lines(
            [
                ("aten::index.Tensor", "y = x[x > 0]"),
                ("aten::index.Tensor", "y = scores[mask]"),
                ("aten::index.Tensor", "y = emb[token_ids]"),
                ("aten::index.Tensor", ""),
            ],
            step=10,
        )
    )
    assert [(r.kind, r.source) for r in risks] == [
        ("dynamic_shape", "model.py:10"),
        ("dynamic_shape", "model.py:20"),
    ]
    assert "torch.where" in risks[0].detail
    assert looks_like_mask_index("out = h[~pad & keep]")
    assert looks_like_mask_index("x[x.isnan()]")
    assert not looks_like_mask_index("x[:, 1:3]")
    assert not looks_like_mask_index("x[idx]")


def test_host_sync_and_python_control_flow() -> None:
    risks = find_risks(
        _ops_on_lines(
            [
                ("aten::_local_scalar_dense", "loss_value = loss.item()"),
                ("aten::_local_scalar_dense", "if x.sum().item() > 0:"),
                ("aten::_local_scalar_dense", "    while (err > tol).any():"),
                ("aten::_local_scalar_dense", "assert torch.isfinite(x).all()"),
                ("aten::_local_scalar_dense", "elif flag:"),
                ("aten::equal", "same = torch.equal(a, b)"),
            ],
            step=10,
        )
    )
    kinds = [(r.kind, r.source) for r in risks]
    assert kinds == [
        ("host_sync", "model.py:10"),
        ("python_control_flow", "model.py:20"),
        ("python_control_flow", "model.py:30"),
        ("python_control_flow", "model.py:40"),
        ("python_control_flow", "model.py:50"),
        ("host_sync", "model.py:60"),
    ]
    assert ".item()" in risks[0].detail
    assert "torch.where" in risks[1].detail


def test_if_inside_a_word_is_not_control_flow() -> None:
    risks = find_risks([_op("aten::_local_scalar_dense", "iffy = x.item()")])
    assert [r.kind for r in risks] == ["host_sync"]


def test_sparse_ops() -> None:
    risks = find_risks(
        _ops_on_lines(
            [
                ("aten::_to_sparse", "s = x.to_sparse()"),
                ("aten::_sparse_mm", "torch.sparse.mm(s, d)"),
                ("aten::_coalesce", "s.coalesce()"),
                ("aten::addmm", "h = self.fc(x)"),
            ],
            step=1,
        )
    )
    assert [(r.kind, r.op) for r in risks] == [
        ("sparse", "aten::_to_sparse"),
        ("sparse", "aten::_sparse_mm"),
        ("sparse", "aten::_coalesce"),
    ]
    assert is_sparse_op("aten::sparse_coo_tensor") and not is_sparse_op("aten::embedding")


def test_dedup_and_harmless_ops() -> None:
    records = [_op("aten::nonzero", "torch.nonzero(x)")] * 3 + [
        _op("aten::mm", "a @ b"),
        _op("aten::view", ""),
    ]
    risks = find_risks(records)
    assert len(risks) == 1
    # the same op at another line is another risk
    assert len(find_risks([*records, _op("aten::nonzero", "torch.nonzero(y)", source="other.py:5")])) == 2


def test_accepts_default_overload_spellings() -> None:
    risks = find_risks(
        [_op("aten::nonzero.default"), _op("aten::_local_scalar_dense.default", source="m.py:2")]
    )
    assert [r.op for r in risks] == ["aten::nonzero", "aten::_local_scalar_dense"]


def _advice_texts() -> list[str]:
    from tpu_runtime.onboard.remedies import remedy_book
    from tpu_runtime.onboard.risks import DYNAMIC_SHAPE_OPS, HOST_SYNC_OPS

    book = remedy_book()
    return [*DYNAMIC_SHAPE_OPS.values(), *HOST_SYNC_OPS.values(), *(r.summary for r in book.rewrites)]


def test_every_call_the_advice_recommends_has_a_tpu_kernel() -> None:
    """A remedy must not send the user to an op TorchTPU lacks (torch.nonzero_static did)."""
    import re

    from tpu_runtime.onboard.coverage import classify
    from tpu_runtime.onboard.op_table import load_op_table

    table = load_op_table()
    calls = {m for text in _advice_texts() for m in re.findall(r"torch\.(?:nn\.functional\.)?(\w+)\(", text)}
    assert "argsort" in calls and "where" in calls
    python_to_aten = {"unique": "_unique2"}  # Python functions whose ATen op has another name
    for name in sorted(calls):
        aten = python_to_aten.get(name, name)
        overloads = [op for op in table.ops if op == f"aten::{aten}" or op.startswith(f"aten::{aten}.")]
        assert overloads, f"torch.{name} has no ATen op in the table"
        assert any(classify(op, table).status != "missing" for op in overloads), f"torch.{name} is missing"


@pytest.mark.slow
def test_ops_show_refuses_ops_that_do_not_exist_and_explains_nonzero() -> None:
    import json
    import subprocess
    import sys

    def show(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tpu_runtime.cli.app", "ops", "show", *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    bogus = show("aten::no_such_op")
    assert bogus.returncode == 2 and "not an operator" in bogus.stderr and "fallback" not in bogus.stdout
    nonzero = show("aten::nonzero", "--json")
    assert nonzero.returncode == 0
    notes = json.loads(nonzero.stdout)["notes"]
    assert any(n.startswith("data-dependent output shape") for n in notes)
