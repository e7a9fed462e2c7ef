"""Stage 5's import of torch_tpu without executing torch inductor's post-grad passes until they are used.

`import torch_tpu` registers its `torch.compile` backend, whose compiler module imports
`torch._inductor.fx_passes.post_grad` at module level, and with it inductor's pattern matcher and
lowerings: about 1.3 s of the 4.2 s that `import torch_tpu` took on an idle core (`python -X importtime`).
Stage 5 wraps the kernel with `torch.tpu.pallas.jax_op` and calls it on fake tensors; it compiles nothing
with `torch.compile`, so it never reads that module. `deferred_inductor_passes()` loads the modules in
`DEFERRED` lazily (`tpu_runtime.deferred_imports`): any code that does use them gets the real module.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from tpu_runtime.deferred_imports import deferred_imports

#: Modules `import torch_tpu` reaches that stage 5 never reads (see the module docstring).
DEFERRED = frozenset({"torch._inductor.fx_passes.post_grad"})


@contextmanager
def deferred_inductor_passes(names: frozenset[str] = DEFERRED) -> Iterator[None]:
    """Within the block, modules in `names` imported for the first time execute on first use."""
    with deferred_imports(names):
        yield
