"""Import named modules lazily: the module object exists at once, its code runs on the first attribute read.

Some libraries import modules at load or trace time that our use of them never reads (torch_tpu's import
reaches torch inductor's post-grad passes; jax's interpret-mode lowering imports the GPU interpreter only to
test `isinstance(params, InterpretGPUParams)`). `deferred_imports(names)` puts a finder on `sys.meta_path`
that loads those modules through `importlib.util.LazyLoader`, so any code that does use one gets the real
module, as before. The finder is removed when the block ends; modules already imported are left as they
are, and a module first imported in the block stays lazy until something reads it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType


class _LazyFinder(importlib.abc.MetaPathFinder):
    """Finds the modules in `names` with the other finders, then loads them lazily."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            if spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            spec.loader = importlib.util.LazyLoader(spec.loader)
            return spec
        return None


@contextmanager
def deferred_imports(names: frozenset[str]) -> Iterator[None]:
    """Within the block, modules in `names` imported for the first time execute on first use."""
    finder = _LazyFinder(frozenset(n for n in names if n not in sys.modules))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
