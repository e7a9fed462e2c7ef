"""Write tpu_runtime/data/guard_aliases.json: which settings the locals a raising check tests were read from.

Run by hand after tpu_runtime/data/raise_sites.json changes:
`python benchmarks/build_guard_aliases.py --git-root DIR` (DIR/OWNER+NAME/repo or DIR/OWNER+NAME is a git
directory holding the commit raise_sites.json names for that repository). For every snapshot site whose
condition names something (its `tests`, crash_raise_guard.guard_facts), the site's file is read at that
commit, the last plain assignment to each of those names in the raising function before the raise is found
(guard_aliases_build.aliases_in_source), and what it says in names is kept (alias_record: the setting it
reads or the list whose product it is; the code itself is not). Sites of installed packages (no repository)
are not read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.diagnose.crash_locations import RAISE_SITES_FILE  # noqa: E402
from tpu_runtime.diagnose.guard_aliases import ALIASES_FILE, site_key  # noqa: E402
from tpu_runtime.diagnose.guard_aliases_build import alias_record, aliases_in_source  # noqa: E402


def _git_dir(root: Path, repo: str) -> Path:
    folder = root / repo.replace("/", "+")
    return folder / "repo" if (folder / "repo").is_dir() else folder


def _source(
    root: Path, repo: str, commit: str, path: str, cache: dict[tuple[str, str], str | None]
) -> str | None:
    key = (repo, path)
    if key not in cache:
        shown = subprocess.run(
            ["git", "--git-dir", str(_git_dir(root, repo)), "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=False,
        )
        cache[key] = shown.stdout if shown.returncode == 0 else None
    return cache[key]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--git-root", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=ALIASES_FILE)
    args = parser.parse_args()
    data = json.loads(RAISE_SITES_FILE.read_text(encoding="utf-8"))
    commits: dict[str, str] = data.get("snapshots", {})
    cache: dict[tuple[str, str], str | None] = {}
    aliases: dict[str, dict[str, dict[str, str]]] = {}
    missing: set[str] = set()
    for site in data["sites"]:
        repo, path, line, names = site.get("repo"), site.get("path"), site.get("line"), site.get("tests")
        if not (repo and path and line and names) or not str(path).endswith(".py") or repo not in commits:
            continue
        source = _source(args.git_root, str(repo), commits[str(repo)], str(path), cache)
        if source is None:
            missing.add(str(repo))
            continue
        found = aliases_in_source(source, int(line), [str(n) for n in names])
        said = {name: record for name, expr in found.items() if (record := alias_record(expr))}
        if said:
            aliases[site_key(str(repo), str(path), int(line))] = said
    rows = ",\n".join(f"{json.dumps(k)}:{json.dumps(v, sort_keys=True)}" for k, v in sorted(aliases.items()))
    head = json.dumps({r: c for r, c in sorted(commits.items()) if r not in missing}, sort_keys=True)
    args.out.write_text(f'{{"snapshots": {head},\n"aliases": {{\n{rows}\n}}}}\n', encoding="utf-8")
    print(
        f"{len(aliases)} sites with aliases written to {args.out}; repositories not read: {sorted(missing)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
