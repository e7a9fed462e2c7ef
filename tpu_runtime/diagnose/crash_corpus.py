"""The corpus of real crash logs (tests/data/crash_logs/real/) and its fixed dev / held-back split.

Each log is machine-written output copied from a public issue thread or documentation page; `index.yaml`
beside the logs names, per file, the source URL, the category a maintainer would give it, the remedy the
thread settled on (in our words) and `remedy_keys`: the named things (a flag, an environment variable, an
API, a layout change) a fix must mention to count as that remedy. Files of one multi-host job share a
`group`, so they fall on the same side of the split.

The split is decided by a hash of the file's group (or its name) alone, so it was fixed before any rule
was written and cannot drift with the rules: rules are written against the `dev` half; the `held_back`
half is only scored, by `benchmarks/diagnose_corpus.py`.
"""

from __future__ import annotations

import hashlib
from typing import Literal

__all__ = ["Split", "split_of"]

Split = Literal["dev", "held_back"]


def split_of(key: str) -> Split:
    """`dev` or `held_back` for a corpus file's group (or file name, without folders), by SHA-256."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "held_back" if digest[0] & 1 else "dev"
