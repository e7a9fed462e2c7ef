"""What `onboard` is asked to do: one request model the front ends fill and every step reads.

A leaf of `tpu_runtime.onboard` (no other onboard module imports at load time), so the job, its steps and
the device check share it without importing one another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from tpu_runtime.onboard.report import KVDtype, PrecisionMode, WeightDtype

KV_DTYPE_BYTES: dict[str, int] = {"f32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


class OnboardRequest(BaseModel):
    model_file: Path | None = None
    hf_config: Path | None = Field(
        default=None, description="a Hugging Face config.json (or the folder holding it) instead of a file"
    )
    weight_dtype: WeightDtype | None = Field(default=None, description="weights as served; default: as built")
    kv_cache_dtype: KVDtype | None = Field(default=None, description="KV cache elements; default: weights'")
    entry: str | None = None
    batch: int | None = Field(default=None, ge=1)
    seq: int | None = Field(default=None, ge=1)
    shrink: Literal["auto", "always", "never"] = "auto"
    shrink_above_params: int = 100_000_000  # GPT-2 small and up: same op set, a fraction of the time
    numerics: bool = True
    modes: list[PrecisionMode] = ["default", "high", "highest", "bf16"]
    fake_tpu: bool = True
    xla: str = "auto"  # 'auto', 'none', 'all' or a comma-separated list of generations
    timeout_s: float = 600.0
    memory_gb: float = 0.0  # 0: three quarters of the machine
    # The device numerics check (tpu_runtime.onboard.device_check) runs on this target after approval.
    target: str | None = None
    device_workers: str = "all"  # all, one index, or a comma list
    device_python: str = "python3"  # the interpreter on the TPU VM
    device_env: dict[str, str] = {}  # environment of the device run, shown for approval
    device_time_limit_s: float = Field(default=1800.0, gt=0)

    @model_validator(mode="after")
    def _one_source(self) -> OnboardRequest:
        if (self.model_file is None) == (self.hf_config is None):
            raise ValueError("give exactly one of a model file and --hf-config")
        if self.hf_config is not None and self.target:
            raise ValueError("--target compares layers of a model file on the device; --hf-config has none")
        return self

    @property
    def source_path(self) -> Path:
        """The model file, or the Hugging Face config it was asked to build."""
        path = self.model_file or self.hf_config
        assert path is not None  # the validator guarantees one
        return path

    @property
    def source_dir(self) -> Path:
        path = self.source_path.resolve()
        return path if path.is_dir() else path.parent
