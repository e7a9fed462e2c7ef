"""Published architectures against their published figures, per half of the config corpus.

For every config in `tests/data/hf_configs/index.yaml` the model is built at full size on fake tensors
(no weights, no network) and its parameter count compared with the model card's; the KV-cache bytes per
token are compared with the hand-worked formula. `dev` configs were used while writing the code,
`held_back` ones only measured. Run by hand: `python benchmarks/onboard_configs.py`.
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from tpu_runtime.onboard import hf_config as hf
from tpu_runtime.onboard.full_size import fake_mode, parameter_stats
from tpu_runtime.onboard.preflight import KVCacheGeometry

CONFIGS = Path(__file__).resolve().parents[1] / "tests" / "data" / "hf_configs"


def main() -> None:
    index = yaml.safe_load((CONFIGS / "index.yaml").read_text())["configs"]
    print("| half | model | built (fake) | published | error | KV bytes/token (bf16) | formula | build s |")
    print("|---|---|---|---|---|---|---|---|")
    summary: dict[str, list[bool]] = {}
    for entry in sorted(index, key=lambda e: (e["half"], e["name"])):
        start = time.perf_counter()
        config = hf.load_config(hf.read_config_dict(CONFIGS / f"{entry['name']}.json"))
        with fake_mode():
            model = hf.build_model(config)
        params = parameter_stats(model)[0]
        seconds = time.perf_counter() - start
        geometry = hf.kv_geometry(config)
        kv = KVCacheGeometry(**geometry.model_dump(), dtype_bytes=2).bytes_per_token() if geometry else 0
        published = float(entry["published_parameters"])
        error = (params - published) / published
        ok = abs(error) < 0.01 and kv == entry["kv_bytes_per_token_bf16"]
        summary.setdefault(entry["half"], []).append(ok)
        print(
            f"| {entry['half']} | {entry['name']} | {params / 1e9:.3f}B | {published / 1e9:.2f}B "
            f"| {error:+.2%} | {kv:,.0f} | {entry['kv_bytes_per_token_bf16']:,} | {seconds:.1f} |"
        )
    for half, oks in summary.items():
        print(f"{half}: {sum(oks)}/{len(oks)} within 1 % of the published count with the KV formula matched")


if __name__ == "__main__":
    main()
