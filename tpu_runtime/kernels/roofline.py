"""A roofline estimate of a kernel's run time on one TPU device, from counts known at compile time.

time = max(FLOPs / peak FLOP/s for the kernel's matmul operand dtype, HBM bytes / HBM bandwidth).

Peaks come from `knowledge/chips.yaml`, per chip and per dtype (bf16, f32, int8, fp8), divided by the
devices a chip presents to the framework (two on TPU7x). A dtype the sheet has no peak for falls back to
the bf16 peak and says so. Every grid step also costs some fixed pipeline bookkeeping; no public page we
cite gives that figure per generation, so it is not added to the estimate: when an assumed
`STEP_COST_S` per step would exceed the roofline time, the report only warns that the blocks look too
small. The result ranks candidates offline; it is never a timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from tpu_runtime.chips import Fact, get_chip

#: An assumed per-grid-step cost, used only to warn about tiny blocks (not a sourced or measured figure).
STEP_COST_S = 0.35e-6
_SCALE = {
    "tflop/s": 1e12,
    "top/s": 1e12,
    "gb/s": 1e9,
    "gib/s": 2.0**30,
    "tb/s": 1e12,
    "mib": 2.0**20,
    "gib": 2.0**30,
    "kib": 2.0**10,
}


def _value(fact: Fact, unit_default: str) -> float:
    unit = (fact.unit or unit_default).lower().replace(" ", "")
    return float(fact.value) * _SCALE.get(unit, 1.0)


@dataclass(frozen=True)
class DevicePeaks:
    generation: str
    peak_flops: float
    hbm_bandwidth: float
    vmem_capacity: int | None
    flops_kind: str
    note: str


def peak_kind(dtype: str | None) -> str:
    """Which published peak a matmul with operands of `dtype` runs at: f32, bf16, int8 or fp8."""
    if not dtype:
        return "bf16"
    if str(dtype).startswith("float8"):
        return "fp8"
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return "bf16"
    if dt.name.startswith("float8"):
        return "fp8"
    if np.issubdtype(dt, np.integer):
        return "int8"
    if dt.name in ("float32", "float64"):
        return "f32"
    return "bf16"


def device_peaks(generation: str, dtype: str | None = None) -> DevicePeaks:
    """Peak FLOP/s for matmuls on `dtype` operands, HBM bytes/s and VMEM bytes of one device."""
    chip = get_chip(generation)
    devices = chip.devices_per_chip.value if chip.devices_per_chip else 1
    kind = peak_kind(dtype)
    published = {"bf16": chip.peak_bf16, "f32": chip.peak_f32, "int8": chip.peak_int8, "fp8": chip.peak_fp8}
    peak = published[kind]
    note = ""
    if peak is None:
        note = f"{chip.name} publishes no {kind} peak; the bf16 peak is used"
        peak, kind = chip.peak_bf16, "bf16"
    vmem = int(_value(chip.vmem_per_core, "MiB")) if chip.vmem_per_core else None
    return DevicePeaks(
        generation=chip.name,
        peak_flops=_value(peak, "TFLOP/s") / devices,
        hbm_bandwidth=_value(chip.hbm_bandwidth, "GB/s") / devices,
        vmem_capacity=vmem,
        flops_kind=kind,
        note=note,
    )


Bound = Literal["compute", "memory"]


def estimate(flops: float, hbm_bytes: float, peaks: DevicePeaks) -> tuple[float, Bound]:
    """(seconds, whether compute or HBM traffic dominates)."""
    compute = flops / peaks.peak_flops if peaks.peak_flops else 0.0
    memory = hbm_bytes / peaks.hbm_bandwidth if peaks.hbm_bandwidth else 0.0
    bound: Bound = "compute" if compute >= memory else "memory"
    return max(compute, memory), bound


def step_cost_note(steps: int, seconds: float) -> str:
    """'' or a warning that the grid has so many steps that fixed per-step costs may rival the estimate."""
    if steps > 64 and steps * STEP_COST_S > seconds:
        return (
            f"; {steps} small grid steps: fixed per-step pipeline costs (not modelled) may rival this "
            "estimate, try bigger blocks"
        )
    return ""
