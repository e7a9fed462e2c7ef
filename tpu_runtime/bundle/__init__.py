"""Native bundles for coding assistants, built from one canonical source.

The canonical source is the repository's `agents/*.md`, `skills/*/SKILL.md`, `workflows/*.yaml`, the MCP
server names `tpu-agent serve` knows, and the approval guard (`hooks/deny_approvals.py` plus the command
prefixes in `guard.py`). Each harness module turns that source into the files its client reads; `build.py`
picks the module and writes the files. The bundles are this step's output, written on demand (into
`bundles/`, which git ignores, or `--out DIR`); the plugin at the root and the server lists in `clients/`
are kept in git, and a test fails when they drift from it.
"""

from tpu_runtime.bundle.build import HARNESSES, BundleError, build_bundle, checked_in_files, write_bundle
from tpu_runtime.bundle.source import CanonicalSource, load_source

__all__ = [
    "HARNESSES",
    "BundleError",
    "CanonicalSource",
    "build_bundle",
    "checked_in_files",
    "load_source",
    "write_bundle",
]
