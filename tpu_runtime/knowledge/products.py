"""Which software stack a question or a quoted line is about.

Several stacks share most of their vocabulary (TorchTPU and PyTorch/XLA both trace, compile and cache;
SGL-JAX, tpu-inference and vLLM TorchTPU all serve Llama on v6e), so a line about one often matches a
question about another word for word. A question that names a stack is answered only by a line that
names it, or that names no stack and sits under a heading or in a sheet about it.

Only stacks that a question names to single one out are listed: generic words ('JAX', 'PyTorch', 'vLLM',
'TPU') name what every stack here builds on.
"""

from __future__ import annotations

import functools
import re

__all__ = ["SHEET_PRODUCTS", "names_product_of", "products_named"]

# Longer names first: 'vLLM TorchTPU' is not TorchTPU, 'sglang-jax' is not JAX.
_PRODUCTS: tuple[tuple[str, str], ...] = (
    ("vllm_torchtpu", r"vllm[-_ ]torch[-_ ]?tpu"),
    ("tpu_inference", r"tpu[-_]inference|vllm[-_]tpu"),
    ("torchtpu", r"torch[-_ ]?tpu"),
    ("pytorch_xla", r"pytorch\s*/\s*xla|torch[-_]xla|pytorch[-_ ]xla"),
    ("sglang_jax", r"sgl[-_ ]?jax|sglang[-_ ]jax"),
    ("maxtext", r"maxtext"),
    ("maxdiffusion", r"maxdiffusion"),
    ("jetstream", r"jetstream"),
    ("torchprime", r"torchprime"),
    ("torchax", r"torchax"),
    ("torchtitan", r"torchtitan"),
    ("levanter", r"levanter"),
    ("tunix", r"tunix"),
    ("easydel", r"easydel"),
    ("tensorflow", r"tensorflow"),
)
_PATTERNS = [(name, re.compile(rf"(?<![\w/.-])(?:{alias})(?![\w])", re.I)) for name, alias in _PRODUCTS]

SHEET_PRODUCTS: dict[str, frozenset[str]] = {
    "knowledge/torchtpu.md": frozenset({"torchtpu"}),
    "knowledge/pytorch_xla.md": frozenset({"pytorch_xla"}),
    "knowledge/sglang_tpu.md": frozenset({"sglang_jax"}),
    "knowledge/maxtext_tpu.md": frozenset({"maxtext"}),
    "knowledge/vllm_tpu.md": frozenset({"tpu_inference", "vllm_torchtpu"}),
}
"""The stack a fact sheet is about, for its lines that name none."""


@functools.lru_cache(maxsize=4096)
def products_named(text: str) -> frozenset[str]:
    """The stacks a text names, each name counted once under its longest form (cached: the gate asks it of
    the same question for every candidate line)."""
    found: set[str] = set()
    for name, pattern in _PATTERNS:
        if pattern.search(text):
            found.add(name)
            text = pattern.sub(" ", text)
    return frozenset(found)


# a name written as code: an identifier or a dotted path ('torch_xla', `torch_xla.launch`, 'r2.1')
_CODE_NAME_RE = re.compile(r"[\w/-]*[_.][\w.]*\w")


def names_product_of(token: str, text: str) -> bool:
    """Whether `text` names in prose the stack whose code name the question writes: a question asking
    about `torch_xla` is answered by a line on 'PyTorch/XLA', the name the sheets mostly use. Only a code
    spelling ('_' joined) is let off, and only by a prose name, not by an API path it begins."""
    named = products_named(token) if "_" in token else frozenset()
    return bool(named) and named <= products_named(_CODE_NAME_RE.sub(" ", text))
