"""What to do about an op TorchTPU has no kernel for: a plain-PyTorch rewrite, the CPU fallback, Pallas.

The remedies live in `tpu_runtime/data/remedies.yaml`. Rewrites there use only ops the op table
registers; tests/test_remedies.py runs each one on CPU against PyTorch's own op and checks that claim.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tpu_runtime.onboard.coverage import base_name, classify, normalise_op
from tpu_runtime.onboard.op_table import OpTable
from tpu_runtime.onboard.report import Remedy
from tpu_runtime.yaml_data import safe_load

REMEDIES_FILE = Path(__file__).resolve().parents[1] / "data" / "remedies.yaml"


class Rewrite(BaseModel):
    """One plain-PyTorch replacement, with the data its test needs."""

    name: str = Field(description="the function the code defines")
    ops: list[str] = Field(description="base names ('aten::nansum') or exact overloads it replaces")
    summary: str
    code: str
    reference: str | None = Field(default=None, description="expression for PyTorch's own op (tests)")
    cases: str | None = Field(default=None, description="expression: [(args, kwargs), ...] (tests)")
    grad: bool = False
    compare: str = "all"
    atol: float | None = None
    rtol: float | None = None
    module_case: bool = False
    reference_float64: bool = False

    def covers(self, op: str) -> bool:
        return op in self.ops or f"{op.split('::', 1)[0]}::{base_name(op)}" in self.ops


class GenericRemedy(BaseModel):
    summary: str
    code: str
    cost: str

    def for_op(self, op: str, kind: Literal["cpu_fallback", "pallas_kernel"]) -> Remedy:
        """This remedy as offered for one op: `{op}` and `{name}` in its summary and code filled in."""
        return Remedy(
            op=op, kind=kind, summary=_fill(self.summary, op), code=_fill(self.code, op), cost=self.cost
        )


class RemedyBook(BaseModel):
    cpu_fallback: GenericRemedy
    pallas: GenericRemedy
    pallas_ops: list[str] = []
    rewrites: list[Rewrite] = []


@functools.lru_cache(maxsize=1)
def remedy_book() -> RemedyBook:
    return RemedyBook.model_validate(safe_load(REMEDIES_FILE.read_text(encoding="utf-8")))


def _fill(text: str, op: str) -> str:
    name = base_name(op).lstrip("_") + "_tpu"
    return text.replace("{op}", op).replace("{name}", name)


def rewrites_for(op: str) -> list[Rewrite]:
    name = normalise_op(op)
    return [r for r in remedy_book().rewrites if r.covers(name)]


def needs_pallas(op: str) -> bool:
    name = normalise_op(op)
    pallas = set(remedy_book().pallas_ops)
    return name in pallas or f"{name.split('::', 1)[0]}::{base_name(name)}" in pallas


def remedies_for(op: str, table: OpTable) -> list[Remedy]:
    """Remedies for one op the table says is missing (an empty list when it is not missing).

    Every missing op gets the CPU-fallback remedy; ops with a known rewrite get it first; heavy ops
    also get a Pallas suggestion.
    """
    verdict = classify(op, table)
    if verdict.status != "missing":
        return []
    name = verdict.op
    book = remedy_book()
    out: list[Remedy] = [
        Remedy(
            op=name,
            kind="rewrite",
            summary=r.summary,
            code=r.code,
            cost=f"stays on the TPU: built from ops the torch_tpu {table.torch_tpu_version} table "
            "registers (limits, if any, are in the summary)",
        )
        for r in rewrites_for(name)
    ]
    out.append(book.cpu_fallback.for_op(name, "cpu_fallback"))
    if needs_pallas(name) or (verdict.tpu_op is not None and needs_pallas(verdict.tpu_op)):
        out.append(book.pallas.for_op(name, "pallas_kernel"))
    return out
