"""Full onboarding of a GPT-2-small-sized model and a ~1B Llama-style model (random weights from configs).

Prints wall time, the child's peak memory and the shrunk-copy speed-up against a full-size run.
Run by hand: `python benchmarks/onboard.py [--quick]`; the figures go into the README.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
from pathlib import Path

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


def run(path: Path, shrink: str, numerics: bool = True) -> tuple[float, float, int, int]:
    start = time.perf_counter()
    report = run_onboard(OnboardRequest(model_file=path, shrink=shrink, numerics=numerics, batch=8, seq=2048))  # type: ignore[arg-type]
    wall = time.perf_counter() - start
    peak = report.peak_host_memory_bytes / 2**30
    return wall, peak, len(report.ops), report.model.parameters


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="GPT-2 small only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        cases = [("gpt2-small", GPT2_SMALL)] + ([] if args.quick else [("llama-1b", LLAMA_1B)])
        for name, source in cases:
            path = Path(tmp) / f"{name.replace('-', '_')}.py"
            path.write_text(textwrap.dedent(source))
            full = run(path, "never", numerics=name == "gpt2-small")
            short = run(path, "always", numerics=name == "gpt2-small")
            rows.append((name, full, short))
        print(
            "| model | params | full size: wall s / peak GiB / ops "
            "| shrunk copy: wall s / peak GiB / ops | speed-up |"
        )
        print("|---|---|---|---|---|")
        for name, (fw, fp, fo, params), (sw, sp, so, _) in rows:
            print(
                f"| {name} | {params / 1e6:.0f}M | {fw:.1f} / {fp:.2f} / {fo} "
                f"| {sw:.1f} / {sp:.2f} / {so} | {fw / sw:.1f}x |"
            )


if __name__ == "__main__":
    main()
