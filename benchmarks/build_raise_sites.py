"""Write tpu_runtime/data/raise_sites.json: the message templates of libraries' raise sites.

Run by hand after the libraries, tpu_runtime/data/raise_locations.yaml or the snapshot config change:
`python benchmarks/build_raise_sites.py --snapshots benchmarks/raise_site_snapshots.yaml --git-root DIR`.
The installed packages are mined as they import (tpu_runtime/diagnose/raise_sites_build.py); the libraries
not installed here from repository snapshots at the commits the config names, each a git directory
DIR/OWNER+NAME/repo or DIR/OWNER+NAME (raise_sites_snapshot.py, raise_sites_cxx.py for C++). Without
`--snapshots` (or for a snapshot whose git directory is not under DIR), the snapshot sites already in the
file are kept as they are. A log line that matches a
template tells `diagnose` which module raised it (crash_locations.find_location). The file holds the
packages' versions and the snapshots' commits, so a stale one can be told; the messages are machine output
(the libraries' error texts), kept as regexes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.diagnose.crash_locations import (  # noqa: E402
    RAISE_SITES_FILE,
    load_locations,
    load_raise_sites,
)
from tpu_runtime.diagnose.raise_sites_build import SiteValue, mapped_first, mine, write_raise_sites  # noqa: E402
from tpu_runtime.diagnose.raise_sites_snapshot import (  # noqa: E402
    load_snapshot_config,
    mine_snapshot,
)


def _git_dir(root: Path, repo: str) -> Path:
    folder = root / repo.replace("/", "+")
    return folder / "repo" if (folder / "repo").is_dir() else folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RAISE_SITES_FILE)
    parser.add_argument("--snapshots", type=Path, default=None, help="the snapshot config (YAML)")
    parser.add_argument("--git-root", type=Path, default=None, help="the folder of the snapshots' git dirs")
    args = parser.parse_args()
    table = load_locations()
    versions, installed = mine(table)
    sites: list[dict[str, SiteValue]] = [dict(site) for site in installed]
    commits: dict[str, str] = {}
    mined_repos: set[str] = set()
    every_module: set[str] = set()  # repos whose unmapped modules' sites are kept too
    if args.snapshots is not None:
        if args.git_root is None:
            parser.error("--snapshots needs --git-root")
        config = load_snapshot_config(args.snapshots)
        every_module = {s.repo for s in config.snapshots if s.all_modules}
        for snapshot in config.snapshots:
            git_dir = _git_dir(args.git_root, snapshot.repo)
            if not git_dir.is_dir():
                print(f"{snapshot.repo}: no git directory at {git_dir}; its sites in {args.out} are kept")
                continue
            commits[snapshot.repo] = snapshot.commit
            mined_repos.add(snapshot.repo)
            mined = mine_snapshot(git_dir, snapshot, table)
            sites.extend(sorted(mined, key=lambda s: (str(s["path"]), int(s["line"]))))
    # a message two libraries raise alike names the library whose module maps, if either does; where both or
    # neither map, the first mined wins (installed packages, then the snapshots in config order)
    sites = mapped_first(sites, table)
    if args.out.is_file():  # snapshots not here: keep the sites mined from them that still map
        old = json.loads(args.out.read_text(encoding="utf-8"))
        kept = [
            s
            for s in old["sites"]
            if s.get("repo")
            and s["repo"] not in mined_repos
            and (
                s["repo"] in every_module or table.category_of_module(s["module"], s["function"]) is not None
            )
        ]
        sites = mapped_first([*sites, *kept], table)
        commits.update(
            {r: c for r, c in old.get("snapshots", {}).items() if any(s["repo"] == r for s in kept)}
        )
    write_raise_sites(args.out, versions, sites, commits)
    load_raise_sites.cache_clear()
    written = load_raise_sites(args.out)
    assert len(written) == len(sites), f"{args.out}: {len(written)} sites read back, {len(sites)} written"
    by_source: dict[str, int] = {}
    for site in sites:
        top = str(site.get("repo") or str(site["module"]).split(".")[0])
        by_source[top] = by_source.get(top, 0) + 1
    size = args.out.stat().st_size
    print(f"{len(sites)} raise sites from {versions} and {commits} -> {args.out}, {size:,} bytes")
    print(f"by source: {by_source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
