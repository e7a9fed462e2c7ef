"""The README each generated bundle carries: what it holds, how to install it, and its guard."""

from __future__ import annotations

from tpu_runtime.bundle.render import GENERATED_NOTE


def harness_readme(client: str, body: str) -> str:
    return f"{GENERATED_NOTE}\n\n# tpu-agent for {client}\n\n{body.strip()}\n"
