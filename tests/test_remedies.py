"""Remedies: every missing op gets one, and every rewrite runs on CPU, matches PyTorch's own op and uses
only ops the torch_tpu 0.2.0 table registers (checked by recording the ops it runs)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from tpu_runtime.onboard.coverage import classify
from tpu_runtime.onboard.op_table import OpTable, load_op_table
from tpu_runtime.onboard.remedies import Rewrite, remedies_for, remedy_book, rewrites_for

REWRITES = remedy_book().rewrites


@pytest.fixture(scope="module")
def table() -> OpTable:
    return load_op_table(prefer_installed=False)


class _RecordOps(TorchDispatchMode):
    """Records every ATen overload that runs below autograd (forward and backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        overload = func._overloadname
        self.ops.add(func._schema.name if overload == "default" else f"{func._schema.name}.{overload}")
        return func(*args, **(kwargs or {}))


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _tensors(item)]
    return []


def _leaves(args: tuple[Any, ...], grad: bool, float64: bool = False) -> tuple[Any, ...]:
    def prep(a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            a = a.detach().clone()
            if float64 and a.is_floating_point():
                a = a.double()
            if grad and a.is_floating_point():
                a.requires_grad_(True)
        return a

    return tuple(prep(a) for a in args)


def _backward(out: Any) -> None:
    total = [t.sum() for t in _tensors(out) if t.requires_grad and t.is_floating_point()]
    if total:
        torch.stack(total).sum().backward()


def _assert_close(actual: torch.Tensor, expected: torch.Tensor, rw: Rewrite) -> None:
    atol: float | None = None
    rtol: float | None = None
    if rw.atol is not None or rw.rtol is not None:
        atol = rw.atol if rw.atol is not None else 1e-5
        rtol = rw.rtol if rw.rtol is not None else 1.3e-6
    torch.testing.assert_close(
        actual.detach(), expected.detach(), equal_nan=True, check_dtype=False, atol=atol, rtol=rtol
    )


def _namespace() -> dict[str, Any]:
    return {"torch": torch, "F": F, "math": math}


def test_book_loads_with_enough_rewrites(table: OpTable) -> None:
    assert len(REWRITES) >= 8
    names = [r.name for r in REWRITES]
    assert len(names) == len(set(names))
    # every op a rewrite claims to replace is one the table says is missing (some overload of it)
    for rw in REWRITES:
        for op in rw.ops:
            overloads = [n for n in table.ops if n == op or n.startswith(op + ".")]
            assert overloads, f"{rw.name}: {op} is not in the table"
            assert any(classify(n, table).status == "missing" for n in overloads), (
                f"{rw.name}: {op} is not missing"
            )


@pytest.mark.parametrize("rw", REWRITES, ids=[r.name for r in REWRITES])
def test_rewrite_matches_reference_and_uses_registered_ops(rw: Rewrite, table: OpTable) -> None:
    ns = _namespace()
    exec(compile(rw.code, f"<rewrite {rw.name}>", "exec"), ns)  # the code as the user sees it
    fn = ns[rw.name]
    assert rw.reference and rw.cases, "each rewrite needs a reference and cases"
    reference = eval(rw.reference, ns)
    torch.manual_seed(0)
    cases = eval(rw.cases, ns)
    recorder = _RecordOps()
    for args, kwargs in cases:
        if rw.module_case:
            module, x = args
            with recorder:
                converted = fn(module)
                out = converted(x)
            expected = reference(module, x)
            assert not any(isinstance(m, torch.nn.SyncBatchNorm) for m in converted.modules())
            _assert_close(out, expected, rw)
            continue
        mine, theirs = _leaves(args, rw.grad), _leaves(args, rw.grad, rw.reference_float64)
        with recorder:
            out = fn(*mine, **kwargs)
            if rw.grad:
                _backward(out)
        expected = reference(*theirs, **kwargs)
        got, want = _tensors(out), _tensors(expected)
        if rw.compare == "first":
            got, want = got[:1], want[:1]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_close(g, w, rw)
        if rw.grad:
            _backward(expected)
            for a, b in zip(mine, theirs, strict=True):
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    mine_grad = a.grad if a.grad is not None else torch.zeros_like(a)
                    their_grad = b.grad if b.grad is not None else torch.zeros_like(b)
                    finite = torch.isfinite(their_grad)
                    _assert_close(mine_grad[finite], their_grad[finite], rw)
    missing = {
        op: classify(op, table).detail for op in recorder.ops if classify(op, table).status == "missing"
    }
    assert not missing, f"{rw.name} runs ops without a TorchTPU kernel: {missing}"
    assert recorder.ops


def test_missing_op_gets_cpu_fallback_first_class(table: OpTable) -> None:
    remedies = remedies_for("aten::nansum", table)
    kinds = [r.kind for r in remedies]
    assert kinds[0] == "rewrite"
    assert "cpu_fallback" in kinds
    fallback = next(r for r in remedies if r.kind == "cpu_fallback")
    assert fallback.code and "enable_cpu_fallback = True" in fallback.code
    assert "torch_tpu._internal import execution_mode" in fallback.code
    assert fallback.cost and "sync" in fallback.cost
    assert "aten::nansum" in fallback.summary


def test_every_missing_aten_op_gets_at_least_the_cpu_fallback(table: OpTable) -> None:
    missing = [op for op in table.names("tpu_fallback") if classify(op, table).status == "missing"]
    assert len(missing) > 300
    for op in missing:
        remedies = remedies_for(op, table)
        assert any(r.kind == "cpu_fallback" for r in remedies), op
        for r in remedies:
            assert "{op}" not in r.summary and "{name}" not in (r.code or "")


def test_supported_and_composite_ops_get_no_remedy(table: OpTable) -> None:
    assert remedies_for("aten::addmm", table) == []
    assert remedies_for("aten::linear", table) == []
    assert remedies_for("aten::_scaled_dot_product_flash_attention_for_cpu", table) == []


def test_structured_op_with_missing_out_gets_the_rewrite(table: OpTable) -> None:
    # aten::mish is structured; its .out overload reaches the fallback
    kinds = [r.kind for r in remedies_for("aten::mish", table)]
    assert kinds[0] == "rewrite" and "cpu_fallback" in kinds
    assert rewrites_for("aten::median.dim") and rewrites_for("aten::kthvalue.values")


def test_heavy_op_gets_pallas_suggestion(table: OpTable) -> None:
    remedies = remedies_for("aten::cholesky", table)
    pallas = [r for r in remedies if r.kind == "pallas_kernel"]
    assert pallas, [r.kind for r in remedies]
    code = pallas[0].code or ""
    assert "torch.tpu.pallas.jax_op" in code and "pallas_call" in code
    compile(code, "<pallas>", "exec")
    assert not any(r.kind == "pallas_kernel" for r in remedies_for("aten::erfc", table))


def test_remedy_code_never_claims_verified(table: OpTable) -> None:
    for op in ["aten::nansum", "aten::cholesky", "aten::erfc"]:
        for r in remedies_for(op, table):
            assert "verified" not in (r.summary + (r.cost or "")).lower()
