"""One BLAS thread for a command that loads numpy but never multiplies matrices (`diagnose`).

numpy's bundled OpenBLAS starts a pool of worker threads, one per core, when numpy is imported, and the
workers spin for a while waiting for work: on the 2-core development machine that doubled the CPU time
of `import numpy` (about 0.28 s against 0.13 s with one thread), most of it on a core the profile reader
never uses. The reader uses numpy only for elementwise, sorting and counting work, which does not go
through BLAS, so the pool is pure cost there.

OpenBLAS reads `OPENBLAS_NUM_THREADS` once, when the library loads. The variable is set only around
the command's own work and only where the person has not set it, and it is removed afterwards so that
nothing started later inherits it; where numpy is already loaded it changes nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_blas_thread"]

VARIABLE = "OPENBLAS_NUM_THREADS"


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block, a numpy loaded for the first time starts OpenBLAS with one thread."""
    if "numpy" in sys.modules or VARIABLE in os.environ:
        yield
        return
    os.environ[VARIABLE] = "1"
    try:
        yield
    finally:
        os.environ.pop(VARIABLE, None)
