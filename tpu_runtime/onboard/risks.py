"""Things in a captured op list that make a TPU recompile or wait for the host.

Works on the records the op capture produces (`capture_types.RawOp`: op, module, source and the text
of that source line). Four kinds are found here:

- dynamic_shape: ops whose output shape depends on tensor values (nonzero, unique, masked_select,
  boolean-mask indexing, ...): each new shape is a new TPU program, and the host must read the size.
- host_sync: ops that hand a tensor value to Python (`.item()`, `.tolist()`, `float(t)`, `bool(t)`,
  `torch.equal`): the host waits for all queued TPU work.
- python_control_flow: such a sync on a line that starts with if/elif/while/assert/for, so Python
  branches on a device value.
- sparse: sparse-tensor ops, which TorchTPU handles only through its sparse fallback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, Protocol

from tpu_runtime.onboard.coverage import base_name, normalise_op
from tpu_runtime.onboard.report import Risk


class OpRecord(Protocol):
    """What find_risks reads from each captured op (capture_types.RawOp has these fields)."""

    @property
    def op(self) -> str: ...
    @property
    def module(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def source_text(self) -> str: ...


RiskKind = Literal["dynamic_shape", "host_sync", "python_control_flow", "sparse"]

_STATIC = "keeps shapes static"

DYNAMIC_SHAPE_OPS: dict[str, str] = {
    "aten::nonzero": "torch.nonzero / torch.where(cond) with one argument / argwhere return one row per "
    "nonzero element. Keep the mask and use torch.where(mask, x, fill), or take a fixed number N of "
    "indices, True ones first in order: torch.argsort(mask.to(torch.int8), descending=True, stable=True)"
    "[..., :N] (torch.nonzero_static has no TorchTPU kernel in torch_tpu 0.2.0)",
    "aten::nonzero_numpy": "torch.nonzero(as_tuple=True) returns one entry per nonzero element. Keep the "
    "mask and use torch.where(mask, x, fill)",
    "aten::_unique": "torch.unique returns as many values as the data holds. Bound it (a fixed vocabulary "
    "and a one-hot or bincount into a fixed size) or compute it once on the host",
    "aten::_unique2": "torch.unique returns as many values as the data holds. Bound it (a fixed vocabulary "
    "and a one-hot or bincount into a fixed size) or compute it once on the host",
    "aten::unique_dim": "torch.unique(dim=...) returns as many rows as the data holds. Bound it or compute "
    "it once on the host",
    "aten::unique_consecutive": "torch.unique_consecutive returns as many values as the data holds. Bound "
    "it or compute it once on the host",
    "aten::unique_dim_consecutive": "torch.unique_consecutive(dim=...) returns as many rows as the data "
    "holds. Bound it or compute it once on the host",
    "aten::masked_select": "torch.masked_select returns one element per True in the mask. Use "
    "torch.where(mask, x, 0) (and a masked reduction) to keep the shape",
    "aten::repeat_interleave.Tensor": "repeat_interleave with a tensor of repeats has a data-dependent "
    "length. Pass output_size= when the total is known",
    "aten::bincount": "torch.bincount's length is max(input) + 1. Pass minlength= large enough, or use "
    "scatter_add into a fixed-size zeros tensor",
}

HOST_SYNC_OPS: dict[str, str] = {
    "aten::_local_scalar_dense": ".item(), .tolist(), float()/int()/bool() on a tensor, or a tensor used "
    "as a Python number",
    "aten::equal": "torch.equal returns a Python bool",
    "aten::allclose": "torch.allclose returns a Python bool",
    "aten::is_nonzero": "bool(tensor) / a tensor in a Python condition",
}

_CONTROL_FLOW = re.compile(r"^(?:if|elif|while|assert|for)\b")
# A subscript that looks like a boolean mask: x[x > 0], x[mask], x[~keep], x[a & b], x[t.isnan()].
_MASK_SUBSCRIPT = re.compile(
    r"\[[^\[\]]*(?:[<>]=?|==|!=|~|&|\||\bmask\w*|\w*_mask\b|\.is\w+\(|\.bool\(\)|\blogical_\w+)[^\[\]]*\]"
)

_SPARSE_EXACT = {
    "to_sparse", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr", "to_sparse_bsc", "_to_dense",
    "sparse_coo_tensor", "sparse_csr_tensor", "sparse_compressed_tensor", "sparse_mask", "_coalesce",
    "coalesce", "_coalesced", "_values", "_indices", "_nnz", "indices", "values", "crow_indices",
    "col_indices", "ccol_indices", "row_indices", "hspmm", "sspaddmm", "smm", "sparse_resize_",
    "sparse_resize_and_clear_", "sparse_sampled_addmm", "_spsolve", "_spdiags", "is_coalesced",
}  # fmt: skip


def shape_notes(op: str) -> list[str]:
    """What an op does to shapes or to the host, for `ops show` (empty for ordinary ops)."""
    from tpu_runtime.onboard.coverage import base_name

    notes = []
    for table, label in ((DYNAMIC_SHAPE_OPS, "data-dependent output shape"), (HOST_SYNC_OPS, "host sync")):
        advice = table.get(op) or table.get(f"{op.split('::', 1)[0]}::{base_name(op)}")
        if advice:
            notes.append(f"{label}: {advice}")
    return notes


def is_sparse_op(op: str) -> bool:
    if not op.startswith("aten::"):
        return False
    name = base_name(op)
    return (
        name.startswith("_sparse_")
        or name.startswith("sparse_")
        or name.startswith("_to_sparse")
        or name in _SPARSE_EXACT
    )


def looks_like_mask_index(source_text: str) -> bool:
    return bool(_MASK_SUBSCRIPT.search(source_text))


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def find_risks(ops: Iterable[OpRecord]) -> list[Risk]:
    """Risks in capture order, one per (kind, op, source line)."""
    risks: list[Risk] = []
    seen: set[tuple[str, str, str]] = set()

    def add(kind: RiskKind, op: str, rec: OpRecord, detail: str) -> None:
        key = (kind, op, rec.source)
        if key in seen:
            return
        seen.add(key)
        risks.append(Risk(kind=kind, op=op, source=rec.source, module=rec.module, detail=detail))

    for rec in ops:
        op = normalise_op(rec.op)
        text = _first_line(getattr(rec, "source_text", "") or "")
        if op in DYNAMIC_SHAPE_OPS:
            add(
                "dynamic_shape",
                op,
                rec,
                f"output shape depends on the data: every new size compiles a new TPU program and the host "
                f"waits to read the size. {DYNAMIC_SHAPE_OPS[op]}",
            )
        elif op == "aten::index.Tensor" and looks_like_mask_index(text):
            add(
                "dynamic_shape",
                op,
                rec,
                "boolean-mask indexing (x[mask]) returns one element per True, so its shape depends on the "
                "data. Use torch.where(mask, x, 0) or multiply by the mask, which " + _STATIC,
            )
        elif op in HOST_SYNC_OPS:
            what = HOST_SYNC_OPS[op]
            if _CONTROL_FLOW.match(text):
                add(
                    "python_control_flow",
                    op,
                    rec,
                    f"Python branches on a tensor value ({what}): the host waits for the TPU on every call, "
                    "and torch.compile breaks the graph there or compiles each branch. Use torch.where / "
                    "torch.cond, or move the check out of the step",
                )
            else:
                add(
                    "host_sync",
                    op,
                    rec,
                    f"{what}: the host waits for all queued TPU work before Python gets the value. Keep "
                    "values on the device (log them every N steps, or use torch.where)",
                )
        elif is_sparse_op(op):
            add(
                "sparse",
                op,
                rec,
                "sparse tensors have no TorchTPU kernels (they go to TorchTPU's sparse fallback). Use dense "
                "tensors, or gathers/embedding lookups for sparse features",
            )
    return risks
