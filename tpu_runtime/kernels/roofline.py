"""A roofline estimate of a kernel's run time on one TPU device, from counts known at compile time.

time = max(FLOPs / peak FLOP/s, HBM bytes / HBM bandwidth) + grid steps x per-step cost.

Peaks come from `knowledge/chips.yaml` (per chip; divided by the devices a chip presents to the framework,
two on TPU7x). int8 kernels use the int8 peak where the sheet has one. The per-step cost is a model
assumption (the pipeline's fixed bookkeeping per grid step, sub-microsecond), not a measured or sourced
figure; it only matters when blocks are tiny. The result ranks candidates offline; it is never a timing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tpu_runtime.chips import Fact, get_chip

STEP_OVERHEAD_S = 0.35e-6
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


def device_peaks(generation: str, int8: bool = False) -> DevicePeaks:
    """Peak FLOP/s (bf16, or int8 for int8 kernels), HBM bytes/s and VMEM bytes of one device."""
    chip = get_chip(generation)
    devices = chip.devices_per_chip.value if chip.devices_per_chip else 1
    kind = "bf16"
    peak = chip.peak_bf16
    note = ""
    if int8:
        if chip.peak_int8 is not None:
            peak, kind = chip.peak_int8, "int8"
        else:
            note = f"{chip.name} publishes no int8 peak; the bf16 peak is used"
    vmem = int(_value(chip.vmem_per_core, "MiB")) if chip.vmem_per_core else None
    return DevicePeaks(
        generation=chip.name,
        peak_flops=_value(peak, "TFLOP/s") / devices,
        hbm_bandwidth=_value(chip.hbm_bandwidth, "GB/s") / devices,
        vmem_capacity=vmem,
        flops_kind=kind,
        note=note,
    )


Bound = Literal["compute", "memory", "overhead"]


def estimate(flops: float, hbm_bytes: float, steps: int, peaks: DevicePeaks) -> tuple[float, Bound]:
    """(seconds, what dominates: compute, HBM traffic, or the per-step cost of too many small blocks)."""
    compute = flops / peaks.peak_flops if peaks.peak_flops else 0.0
    memory = hbm_bytes / peaks.hbm_bandwidth if peaks.hbm_bandwidth else 0.0
    overhead = max(steps, 0) * STEP_OVERHEAD_S
    bound: Bound = "compute" if compute >= memory else "memory"
    if overhead > max(compute, memory):
        bound = "overhead"
    return max(compute, memory) + overhead, bound
