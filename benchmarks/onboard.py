"""Onboarding benchmarks: small and mid-size models run for real, and real-size models that do not fit.

`python benchmarks/onboard.py [--quick]`: GPT-2 small and a ~1B Llama (random weights from configs), full
size against the shrunk copy. `python benchmarks/onboard.py --real-size`: Llama-3-8B, Mixtral-8x7B,
Llama-3-70B and DeepSeek-V3 built from their published configs (tests/data/hf_configs) at full size on
fake tensors, and KernelBench-style files whose inputs exceed memory, each with wall time and the
child's peak host memory. The figures go into the README.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the KernelBench problems live with the tests

from tests.kernelbench_problems import GIANT_MATMUL
from tpu_runtime.onboard.job import OnboardRequest, run_onboard

GPT2_SMALL = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

def get_model():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config())  # 124M parameters, the GPT-2 small shape

def get_inputs():
    return {"input_ids": torch.randint(0, 50257, (1, 128))}
"""

LLAMA_1B = """
import torch
from transformers import LlamaConfig, LlamaForCausalLM

def get_model():
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, vocab_size=32000,
                         max_position_embeddings=2048, architectures=["LlamaForCausalLM"])
    return LlamaForCausalLM(config)  # about 1.1B parameters

def get_inputs():
    return {"input_ids": torch.randint(0, 32000, (1, 128))}
"""


#: The anchor: what any op inventory costs, in a fresh process like the job's child (imports included):
#: build the model from the same file and record the ATen ops of one forward and backward.
BARE_CAPTURE = """
import runpy, sys
from torch.utils._python_dispatch import TorchDispatchMode

ns = runpy.run_path(sys.argv[1])
model, inputs = ns["get_model"](), ns["get_inputs"]()


class Ops(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(str(func))
        return func(*args, **(kwargs or {}))


with Ops() as mode:
    out = model(**inputs)
    getattr(out, "logits", out).float().sum().backward()
print(len(mode.ops))
"""


def bare_capture(path: Path) -> float:
    """Seconds for the anchor on `path`, with the child's environment switches."""
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "TPU_SKIP_MDS_QUERY": "1"}
    env["JAX_PLATFORMS"] = "cpu"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", BARE_CAPTURE, str(path)], env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def run(path: Path, shrink: str, numerics: bool = True) -> tuple[float, float, int, int]:
    start = time.perf_counter()
    report = run_onboard(OnboardRequest(model_file=path, shrink=shrink, numerics=numerics, batch=8, seq=2048))  # type: ignore[arg-type]
    wall = time.perf_counter() - start
    peak = report.peak_host_memory_bytes / 2**30
    return wall, peak, len(report.ops), report.model.parameters


CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "hf_configs"
REAL_SIZE = [  # (config, numerics): the budget is 120 s and 6 GB each
    ("llama3_8b", True),
    ("mixtral_8x7b", True),
    ("llama3_70b", False),
    ("deepseek_v3", False),
]


BIG_CONV = """
import torch
import torch.nn as nn

batch_size = 256
in_channels = 64
out_channels = 128
height = 512
width = 512

class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels]
"""


def real_size() -> None:
    print("| model | how | params | ops | numerics compared on | wall s | peak GiB |")
    print("|---|---|---|---|---|---|---|")
    for name, numerics in REAL_SIZE:
        start = time.perf_counter()
        report = run_onboard(
            OnboardRequest(
                hf_config=CONFIGS / f"{name}.json", weight_dtype="bf16", batch=1, seq=2048, numerics=numerics
            )
        )
        wall = time.perf_counter() - start
        compared = report.numerics.compared_on if report.numerics and report.numerics.compared_on else "—"
        print(
            f"| {name} | --hf-config | {report.model.parameters / 1e9:.2f}B | {len(report.ops)} "
            f"| {compared.split(';')[1].strip() if ';' in compared else compared} | {wall:.1f} "
            f"| {report.peak_host_memory_bytes / 2**30:.2f} |"
        )
    with tempfile.TemporaryDirectory() as tmp:
        for name, source in (("giant_matmul", GIANT_MATMUL), ("big_conv", BIG_CONV)):
            path = Path(tmp) / f"{name}.py"
            path.write_text(textwrap.dedent(source))
            start = time.perf_counter()
            report = run_onboard(OnboardRequest(model_file=path))
            wall = time.perf_counter() - start
            size = report.size
            shapes = ", ".join(size.numerics_input_shapes) if size else "—"
            print(
                f"| {name} (KernelBench style, inputs {(size.input_bytes if size else 0) / 2**30:.0f} GiB) "
                f"| file | {report.model.parameters:,} | {len(report.ops)} | inputs {shapes} | {wall:.1f} "
                f"| {report.peak_host_memory_bytes / 2**30:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="GPT-2 small only")
    parser.add_argument("--real-size", action="store_true", help="models and inputs larger than memory")
    args = parser.parse_args()
    if args.real_size:
        real_size()
        return
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        cases = [("gpt2-small", GPT2_SMALL)] + ([] if args.quick else [("llama-1b", LLAMA_1B)])
        for name, source in cases:
            path = Path(tmp) / f"{name.replace('-', '_')}.py"
            path.write_text(textwrap.dedent(source))
            # the anchor runs before and after each job and the job is set against the mean of the two,
            # so load that changes during the run (a shared machine) shows in both
            before = bare_capture(path)
            full = run(path, "never", numerics=name == "gpt2-small")
            middle = bare_capture(path)
            short = run(path, "always", numerics=name == "gpt2-small")
            after = bare_capture(path)
            rows.append((name, (before + middle) / 2, (middle + after) / 2, full, short))
        after = os.getloadavg()[0]
        print(f"load average (1 min) {load_before:.2f} before, {after:.2f} after; {os.cpu_count()} CPUs")
        print(
            "anchor: a fresh process that builds the model and records its ops, forward and backward "
            "(the mean of its runs just before and after each job)\n"
        )
        print(
            "| model | params | full size: wall s (x anchor) / peak GiB / ops "
            "| shrunk copy: wall s (x anchor) / peak GiB / ops | anchor s | speed-up |"
        )
        print("|---|---|---|---|---|---|")
        for name, a_full, a_short, (fw, fp, fo, params), (sw, sp, so, _) in rows:
            print(
                f"| {name} | {params / 1e6:.0f}M "
                f"| {fw:.1f} ({fw / a_full:.1f}x) / {fp:.2f} / {fo} "
                f"| {sw:.1f} ({sw / a_short:.1f}x) / {sp:.2f} / {so} | {a_full:.1f}, {a_short:.1f} "
                f"| {fw / sw:.1f}x |"
            )


if __name__ == "__main__":
    main()
