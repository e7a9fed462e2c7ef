"""Stage 5's import of torch_tpu without executing torch inductor's post-grad passes until they are used.

`import torch_tpu` registers its `torch.compile` backend, whose compiler module imports
`torch._inductor.fx_passes.post_grad` at module level, and with it inductor's pattern matcher and
lowerings: about 1.3 s of the 4.2 s that `import torch_tpu` took on an idle core (`python -X importtime`).
Stage 5 wraps the kernel with `torch.tpu.pallas.jax_op` and calls it on fake tensors; it compiles nothing
with `torch.compile`, so it never reads that module.

`deferred_inductor_passes()` puts a finder on `sys.meta_path` that loads the modules in `DEFERRED` through
`importlib.util.LazyLoader`: the module object exists at once and its code runs on the first attribute
read, so any code that does use it gets the real module, as before. The finder is removed when the block
ends; modules already imported are left as they are.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType

#: Modules `import torch_tpu` reaches that stage 5 never reads (see the module docstring).
DEFERRED = frozenset({"torch._inductor.fx_passes.post_grad"})


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
def deferred_inductor_passes(names: frozenset[str] = DEFERRED) -> Iterator[None]:
    """Within the block, modules in `names` imported for the first time execute on first use."""
    finder = _LazyFinder(frozenset(n for n in names if n not in sys.modules))
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
