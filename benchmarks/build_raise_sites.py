"""Write tpu_runtime/data/raise_sites.json: the message templates of the installed libraries' raise sites.

Run by hand after the libraries or tpu_runtime/data/raise_locations.yaml change:
`python benchmarks/build_raise_sites.py` (the mining is tpu_runtime/diagnose/raise_sites_build.py). A log
line that matches a template tells `diagnose` which module raised it (crash_locations.find_locations). The
file holds the packages' versions, so a stale one can be told; the messages are machine output (the
libraries' error texts), kept as regexes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.diagnose.crash_locations import (  # noqa: E402
    RAISE_SITES_FILE,
    load_locations,
    load_raise_sites,
)
from tpu_runtime.diagnose.raise_sites_build import mine, write_raise_sites  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RAISE_SITES_FILE)
    args = parser.parse_args()
    versions, sites = mine(load_locations())
    write_raise_sites(args.out, versions, sites)
    load_raise_sites.cache_clear()
    written = load_raise_sites(args.out)
    assert len(written) == len(sites), f"{args.out}: {len(written)} sites read back, {len(sites)} written"
    by_package: dict[str, int] = {}
    for site in sites:
        top = site["module"].split(".")[0]
        by_package[top] = by_package.get(top, 0) + 1
    print(f"{len(sites)} raise sites from {versions} -> {args.out} ({by_package})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
