"""Judge one ATen overload against TorchTPU's op table: supported, composite, CPU-only variant or missing.

The table says what a torch_tpu release *registers* for the PrivateUse1 (TPU) dispatch key; every
verdict names that release and never claims the op was run on a chip.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tpu_runtime.onboard.op_table import OpKind, OpTable, classify_line, dispatch_lines
from tpu_runtime.onboard.report import OpStatus
from tpu_runtime.yaml_data import safe_load

CPU_VARIANTS_FILE = Path(__file__).resolve().parents[1] / "data" / "cpu_variants.yaml"

# Ops that only change a tensor's metadata (shape, strides, offset, autograd identity). A TPU tensor
# handles them without a device kernel, so they are never reported missing.
VIEW_OPS = frozenset(
    {
        "view", "_unsafe_view", "_reshape_alias", "reshape", "view_as", "t", "t_", "transpose",
        "transpose_", "swapaxes", "swapdims", "expand", "expand_as", "as_strided", "as_strided_",
        "permute", "movedim", "moveaxis", "slice", "select", "narrow", "unsqueeze", "unsqueeze_",
        "squeeze", "squeeze_", "flatten", "unflatten", "ravel", "alias", "detach", "detach_",
        "unfold", "unbind", "split", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes",
        "chunk", "unsafe_chunk", "tensor_split", "hsplit", "vsplit", "dsplit", "diagonal",
        "view_as_real", "view_as_complex", "real", "imag", "_conj", "conj", "_neg_view", "lift",
        "lift_fresh", "_fw_primal", "_make_dual", "numpy_T", "matrix_H", "mT", "mH", "adjoint",
        "positive", "resolve_conj", "resolve_neg", "contiguous", "_nested_view_from_buffer",
    }
)  # fmt: skip

# Generic (CompositeExplicitAutograd) kernels whose callee a schema match cannot find, from PyTorch's
# native implementations in torch 2.13. Used only when the callee exists in the table.
KNOWN_CALLEES: dict[str, str] = {
    "aten::sort": "aten::sort.stable",
    "aten::sort.values": "aten::sort.values_stable",
    "aten::cummax": "aten::_cummax_helper",
    "aten::cummin": "aten::_cummin_helper",
    "aten::logcumsumexp": "aten::_logcumsumexp",
    "aten::sum": "aten::sum.dim_IntList",
    "aten::mean": "aten::mean.dim",
    "aten::count_nonzero": "aten::count_nonzero.dim_IntList",
    "aten::index_put": "aten::_index_put_impl_",
    "aten::index_put_": "aten::_index_put_impl_",
    "aten::_index_put_impl": "aten::_index_put_impl_",
    "aten::randperm": "aten::randperm.generator_out",
    "aten::randperm.generator": "aten::randperm.generator_out",
    "aten::eye": "aten::eye.out",
    "aten::eye.m": "aten::eye.m_out",
    "aten::arange": "aten::arange.start_out",
    "aten::arange.start": "aten::arange.start_out",
    "aten::arange.start_step": "aten::arange.start_out",
    "aten::linspace": "aten::linspace.out",
    "aten::logspace": "aten::logspace.out",
    "aten::range": "aten::range.out",
    "aten::range.step": "aten::range.out",
    "aten::cauchy": "aten::cauchy_",
    "aten::log_normal": "aten::log_normal_",
    "aten::geometric": "aten::geometric_",
    "aten::exponential": "aten::exponential_",
    "aten::uniform": "aten::uniform_",
}


class CpuVariant(BaseModel):
    tpu_op: str
    reason: str


class OpVerdict(BaseModel):
    """How one overload fares on TPU according to the op table."""

    op: str = Field(description="normalised overload name, e.g. 'aten::mm' or 'aten::add.Tensor'")
    status: OpStatus
    detail: str
    tpu_op: str | None = Field(default=None, description="device counterpart of a CPU-only variant")
    kind: str = Field(default="unknown", description="raw table classification of the op itself")


def normalise_op(op: str) -> str:
    """'aten::mm.default' / 'aten.mm.default' / 'mm' -> 'aten::mm'; 'aten::add.Tensor' stays."""
    name = op.strip()
    if name.startswith("torch.ops."):
        name = name[len("torch.ops.") :]
    if "::" not in name:
        if "." in name and name.split(".", 1)[0] in {"aten", "prims", "tpu", "quantized"}:
            ns, rest = name.split(".", 1)
            name = f"{ns}::{rest}"
        else:
            name = f"aten::{name}"
    if name.endswith(".default"):
        name = name[: -len(".default")]
    return name


def base_name(op: str) -> str:
    """'aten::transpose.int' -> 'transpose'."""
    return op.split("::", 1)[-1].split(".", 1)[0]


def is_view_op(op: str) -> bool:
    return op.startswith("aten::") and base_name(op) in VIEW_OPS


@functools.lru_cache(maxsize=1)
def cpu_variants() -> dict[str, CpuVariant]:
    data = safe_load(CPU_VARIANTS_FILE.read_text(encoding="utf-8")) or {}
    return {name: CpuVariant(**entry) for name, entry in data.items()}


def _release(table: OpTable) -> str:
    return f"torch_tpu {table.torch_tpu_version}"


def _live_kind(op: str) -> OpKind | None:
    """Ask this process's dispatcher about an op the table lacks (a custom op the user's code registered).

    Only when torch is already imported; never imports torch or torch_tpu here.
    """
    torch: Any = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        text = torch._C._dispatch_dump_table(op)
    except (RuntimeError, AttributeError):
        return None
    pu1, _ = dispatch_lines(text)
    return classify_line(pu1) if pu1 else None


def _judge(op: str, table: OpTable, seen: frozenset[str]) -> OpVerdict:
    rel = _release(table)
    entry = table.ops.get(op)
    if entry is None:
        return _judge_unlisted(op, table)
    kind = entry.kind
    if entry.autograd_override:
        return OpVerdict(
            op=op,
            status="supported",
            kind=kind,
            detail=f"autograd-level TorchTPU kernel registered in {rel}: {op} runs as one TPU op, "
            "forward and backward, instead of decomposing",
        )
    if kind in _SETTLED:
        status, detail = _SETTLED[kind]
        return OpVerdict(op=op, status=status, kind=kind, detail=detail.format(rel=rel, op=op))
    target = _callee(op, table)
    if target and target not in seen:
        sub = _judge(target, table, seen | {op})
        how = (
            f"structured op whose functional form calls {target}"
            if kind == "structured_out"
            else f"PyTorch's generic kernel for every device calls {target}"
        )
        if sub.status == "supported":
            return OpVerdict(
                op=op,
                status="supported",
                kind=kind,
                detail=f"registered in {rel} through {_chain(target, table)} ({how})",
            )
        if sub.status == "missing":
            return OpVerdict(
                op=op,
                status="missing",
                kind=kind,
                detail=f"{how}, which has no kernel registered in {rel}: "
                f"{_chain(target, table)} {_MISSING_TAIL[sub.kind == 'none']}",
            )
        return OpVerdict(
            op=op,
            status="composite",
            kind=kind,
            detail=f"no kernel of its own in {rel}; {how}, which decomposes into other ATen ops",
        )
    return OpVerdict(
        op=op,
        status="composite",
        kind=kind,
        detail=f"no kernel of its own in {rel}; PyTorch's generic kernel for every device "
        "(CompositeExplicitAutograd) runs it by calling other ATen ops",
    )


# Kinds whose verdict the table entry settles on its own: the status, and the detail ({rel}: the
# torch_tpu release, {op}: the overload).
_SETTLED: dict[str, tuple[OpStatus, str]] = {
    "tpu_kernel": ("supported", "TorchTPU kernel registered in {rel}"),
    "tpu_fallback": (
        "missing",
        "no kernel registered in {rel}: {op} reaches TorchTPU's missing-op fallback, which "
        "raises 'not implemented for TPU' unless the opt-in CPU fallback is enabled",
    ),
    "none": (
        "missing",
        "nothing registered for TPU (PrivateUse1) in {rel}, not even the missing-op fallback",
    ),
    "composite_implicit": (
        "composite",
        "no kernel of its own in {rel}; PyTorch decomposes it (CompositeImplicitAutograd) "
        "into other ATen ops, which are judged on their own",
    ),
    "python_kernel": (
        "composite",
        "no TorchTPU kernel in {rel}; a Python kernel PyTorch registers for every device "
        "runs it by calling other ops",
    ),
}

_MISSING_TAIL = {
    False: "reaches TorchTPU's missing-op fallback",
    True: "has nothing registered for TPU",
}


def _callee(op: str, table: OpTable) -> str | None:
    """The overload a structured or generic kernel hands the work to, when the table or we know it."""
    entry = table.ops.get(op)
    if entry is None or entry.kind not in ("structured_out", "composite_explicit"):
        return None
    if entry.target:
        return entry.target
    if entry.kind != "composite_explicit":
        return None
    callee = KNOWN_CALLEES.get(op)
    if callee in table.ops:
        return callee
    return _scalar_sibling(op, table)


def _scalar_sibling(op: str, table: OpTable) -> str | None:
    """A generic Scalar overload wraps the scalar in a tensor and calls the Tensor overload
    (aten::mul.Scalar -> aten::mul.Tensor, aten::special_zeta.self_scalar -> aten::special_zeta)."""
    base, _, overload = op.partition(".")
    if "scalar" not in overload.lower():
        return None
    candidates = [f"{base}.{overload.replace('Scalar', 'Tensor')}", f"{base}.Tensor", base]
    for cand in candidates:
        entry = table.ops.get(cand)
        if cand != op and entry is not None and entry.kind != "composite_explicit":
            return cand
    return None


def _chain(op: str, table: OpTable) -> str:
    """'aten::sort.stable -> aten::sort.values_stable' (an op and the overloads it hands work to)."""
    path = [op]
    while len(path) < 6:
        nxt = _callee(path[-1], table)
        if nxt is None or nxt in path:
            break
        path.append(nxt)
    return " -> ".join(path)


def _judge_unlisted(op: str, table: OpTable) -> OpVerdict:
    rel = _release(table)
    namespace = op.split("::", 1)[0]
    live = _live_kind(op)
    if live in ("composite_implicit", "composite_explicit", "python_kernel", "structured_out"):
        return OpVerdict(
            op=op,
            status="composite",
            kind=live,
            detail=f"{op} is not in the {rel} table (registered by your code?); it has a kernel for every "
            "device that calls other ops, which are judged on their own",
        )
    if live == "tpu_kernel":
        return OpVerdict(
            op=op,
            status="supported",
            kind=live,
            detail=f"{op} is not in the {rel} table, but this process registers a TPU kernel for it",
        )
    if namespace == "aten":
        return OpVerdict(
            op=op,
            status="missing",
            kind="unknown",
            detail=f"{op} is not in the op table for {table.label}: no kernel registered in {rel} "
            "(an op from a newer torch, or a misspelt name)",
        )
    return OpVerdict(
        op=op,
        status="missing",
        kind="unknown",
        detail=f"custom op {op} is not in the {rel} table and no TPU kernel is registered for it: register "
        "one for 'PrivateUse1' with torch.library, or give it a composite implementation",
    )


def classify(op: str, table: OpTable) -> OpVerdict:
    """The verdict for one overload name ('aten::addmm', 'aten::add.Tensor', 'aten::mm.default')."""
    name = normalise_op(op)
    variant = cpu_variants().get(name)
    if variant is not None:
        counterpart = _judge(variant.tpu_op, table, frozenset({name}))
        if counterpart.status != "missing":
            return OpVerdict(
                op=name,
                status="cpu_variant",
                tpu_op=variant.tpu_op,
                kind=table.ops[name].kind if name in table.ops else "unknown",
                detail=f"CPU-only kernel: {variant.reason} {variant.tpu_op}: {counterpart.detail}",
            )
        return OpVerdict(
            op=name,
            status="missing",
            tpu_op=variant.tpu_op,
            kind=table.ops[name].kind if name in table.ops else "unknown",
            detail=f"CPU-only kernel ({variant.reason.rstrip('.')}); its device form {variant.tpu_op}: "
            f"{counterpart.detail}",
        )
    verdict = _judge(name, table, frozenset())
    if verdict.status == "missing" and is_view_op(name):
        return OpVerdict(
            op=name,
            status="supported",
            kind=verdict.kind,
            detail=f"view/alias op: it changes only shape, strides or offset, which a TPU tensor handles "
            f"without a device kernel (table entry in {_release(table)}: {verdict.kind})",
        )
    return verdict


def classify_many(ops: list[str], table: OpTable) -> dict[str, OpVerdict]:
    return {op: classify(op, table) for op in ops}


def aten_op_exists(op: str) -> bool:
    """Whether the installed torch defines this operator (any overload when none is named)."""
    import torch

    namespace, _, rest = normalise_op(op).partition("::")
    base, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), base)
    except (AttributeError, RuntimeError):
        return False
    return not overload or overload in packet.overloads()
