"""The package versions a crash log states, in every wording the tools that print them use.

One reader for every fact that needs a version (the `versions` fact, jax/jaxlib skew, the jax release a
removed config flag was last in), so that a wording read for one is read for all. Logs print versions as
prose (`jax version 0.4.14`, `jaxlib is 0.4.30`), as `pip list` columns (`jax    0.4.26`), as
`pip freeze` pins (`jax==0.4.26`), as `pip show` records (`Name: jax` then `Version: 0.4.26`) and as
`jax.print_environment_info()` lines (`jax:    0.4.26`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MAX_PACKAGES", "package_versions"]

MAX_PACKAGES = 12
_PACKAGES = (
    r"jaxlib|jax|libtpu(?:[-_]nightly)?|torch[-_]xla|torch[-_]tpu|torch|tensorflow(?:[-_]tpu)?|vllm|"
    r"tpu[-_]inference|flax|transformers"
)
_VER = r"\d+\.\d+(?:\.\d+)?(?:(?:\.dev|\.post|rc|\+)[\w.]*)?"
# A package name, optional extras, a separator (`==`, `:`, ` version`, ` is`, a column's spaces), the version.
_VERSION = re.compile(
    rf"(?<![\w/.-])(?P<pkg>{_PACKAGES})(?:\[[\w,]+\])?(?: version| is version| is)?(?:\s*[=:]=?\s*|\s+v?)"
    rf"(?P<ver>{_VER})(?![\w.-]*/)\b"
)
# pip show: "Name: jax" on one line, "Version: 0.4.26" on the next.
_PIP_SHOW_NAME = re.compile(rf"^\s*Name:\s*(?P<pkg>{_PACKAGES})\s*$", re.IGNORECASE)
_PIP_SHOW_VERSION = re.compile(rf"^\s*Version:\s*(?P<ver>{_VER})\s*$")
_PJRT_API = re.compile(r"PJRT (?:C )?API version (?:is )?\(?(?P<ver>\d+\.\d+)")
# A cheap test before the full pattern: the line names one of the packages (or PJRT) and holds a digit.
_PREFILTER = re.compile(r"jax|libtpu|torch|tensorflow|vllm|inference|flax|transformers|PJRT|Version:", re.I)


def _key(pkg: str) -> str:
    return pkg.lower().replace("-", "_")


def package_versions(lines: Sequence[str]) -> dict[str, str]:
    """package -> the first version the log states for it (at most MAX_PACKAGES), plus `pjrt_api` (and
    `pjrt_api_2`) for the PJRT C API versions a plugin mismatch prints."""
    seen: dict[str, str] = {}
    shown: str | None = None  # the package of a pip show record whose Version line may follow
    for line in lines:
        if not _PREFILTER.search(line):
            shown = None
            continue
        if shown is not None:
            m = _PIP_SHOW_VERSION.match(line)
            if m is not None:
                seen.setdefault(shown, m["ver"])
                shown = None
                continue
        name = _PIP_SHOW_NAME.match(line)
        if name is not None:
            shown = _key(name["pkg"])
            continue
        for m in _VERSION.finditer(line):
            seen.setdefault(_key(m["pkg"]), m["ver"])
        for i, m in enumerate(_PJRT_API.finditer(line)):
            seen.setdefault("pjrt_api" if i == 0 else "pjrt_api_2", m["ver"])
    return dict(list(seen.items())[:MAX_PACKAGES])
