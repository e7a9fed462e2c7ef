"""Run big models as a shallower copy: repeated blocks run the same ops, so two of them show the op set.

The copy shares the original's parameters (no memory is doubled); the original is restored on exit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

_LAYER_COUNT_KEYS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "num_decoder_layers",
    "decoder_layers",
    "encoder_layers",
)


@dataclass
class ShrinkResult:
    lists: list[tuple[str, int, int]]  # (module path, original length, kept)

    @property
    def depth_ratio(self) -> float:
        """How many times deeper the real model is than the copy (largest repeated stack)."""
        if not self.lists:
            return 1.0
        return max(orig / kept for _, orig, kept in self.lists)

    def describe(self) -> str:
        parts = [f"{path} {orig}->{kept}" for path, orig, kept in self.lists]
        return "ran a shallower copy (" + ", ".join(parts) + "): repeated blocks run the same ops"


def repeated_stacks(model: torch.nn.Module, min_len: int) -> list[tuple[str, torch.nn.ModuleList]]:
    stacks = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) >= min_len:
            kinds = {type(child) for child in module}
            if len(kinds) == 1:
                stacks.append((name, module))
    return stacks


@contextmanager
def shallow_copy(model: torch.nn.Module, keep: int = 2, min_len: int = 4) -> Iterator[ShrinkResult]:
    """Temporarily cut each stack of >= `min_len` identical blocks down to `keep`."""
    saved: list[tuple[torch.nn.ModuleList, list[torch.nn.Module]]] = []
    config_saved: list[tuple[object, str, int]] = []
    try:
        result = _cut(model, keep, min_len, saved, config_saved)
        yield result
    finally:
        for stack, children in saved:
            for index in range(len(stack) - 1, -1, -1):
                del stack[index]
            stack.extend(children)
        for config, key, value in config_saved:
            setattr(config, key, value)


def cut_stacks(
    model: torch.nn.Module, keep: int = 2, min_len: int = 4
) -> tuple[ShrinkResult, Callable[[], None]]:
    """`shallow_copy` for good, for a copy built to be shrunk (`meta_build.py`): the stacks stay cut. Returns
    the result and a call that sets the configs' layer counts to `keep`: a copy initialised before that
    call is initialised as the full-depth model is (GPT-2 scales weights by its depth)."""
    result = _cut(model, keep, min_len, [], None)

    def patch_counts() -> None:
        if result.lists:
            _patch_layer_counts(model, keep)

    return result, patch_counts


def _cut(
    model: torch.nn.Module,
    keep: int,
    min_len: int,
    saved: list[tuple[torch.nn.ModuleList, list[torch.nn.Module]]],
    config_saved: list[tuple[object, str, int]] | None,
) -> ShrinkResult:
    """Cut the stacks, recording in `saved` and `config_saved` what a restore needs; with no
    `config_saved`, the configs' layer counts are left alone."""
    result = ShrinkResult([])
    for name, stack in repeated_stacks(model, min_len):
        children = list(stack)
        saved.append((stack, children))
        for index in range(len(stack) - 1, keep - 1, -1):
            del stack[index]
        result.lists.append((name or "(model)", len(children), keep))
    if result.lists and config_saved is not None:
        config_saved.extend(_patch_layer_counts(model, keep))
    return result


def _patch_layer_counts(model: torch.nn.Module, keep: int) -> list[tuple[object, str, int]]:
    """Hugging Face models size their caches from config.num_hidden_layers: keep it consistent."""
    patched: list[tuple[object, str, int]] = []
    configs = [getattr(m, "config", None) for m in model.modules()]
    seen: set[int] = set()
    for config in configs:
        if config is None or id(config) in seen:
            continue
        seen.add(id(config))
        for holder in [config, getattr(config, "text_config", None)]:
            if holder is None:
                continue
            for key in _LAYER_COUNT_KEYS:
                value = getattr(holder, key, None)
                if isinstance(value, int) and value > keep:
                    patched.append((holder, key, value))
                    setattr(holder, key, keep)
    return patched
