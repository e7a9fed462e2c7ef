"""Facts about sizes and releases a crash log states in any wording, for fixes that name them.

Four families that rules cannot compute from one regex group: a vocabulary-sized dimension padded to a
multiple of 128 on one side only (`vocab_*`), the Python a refused wheel was built for (`wheel_*`, from its
cp tag), the jax config flag the installed jax lacks, with the release before the installed one
(`config_flag`, `jax_installed`, `jax_previous`), and an API a library's deprecation message names with its
replacement and the release that removed it (`deprecated_api`, `api_replacement`, `api_removed_in`,
`api_deprecated_in`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tpu_runtime.diagnose.crash_versions import package_versions

__all__ = [
    "deprecated_api_facts",
    "jax_config_flag_facts",
    "release_facts",
    "vocab_padding_facts",
    "wheel_tag_facts",
]

MAX_LINES = 4000

# Lines that print shapes or dimensions ("dimensions: 32128", "[4096, 32128]", "shape (32000, 512)").
_SHAPE_LINE = re.compile(r"(?i)dimensions?\s*:|shapes?\b|\bsizes?\b|mismatch|[\[(]\d+,\s*\d+")
_INT = re.compile(r"(?<![\w.])(\d{4,7})(?![\w.])")
# Vocabularies are at least this large; the padding (sentinel or added ids, rounded up) at most this much.
_MIN_VOCAB = 8000
_MAX_EXTRA = 1024
_ALIGN = 128


def vocab_padding_facts(lines: Sequence[str]) -> dict[str, int]:
    """`vocab_rows`, `vocab_padded_rows`, `vocab_extra`: two vocabulary-sized dimensions in shape lines where
    the larger is the smaller plus at most 1024 rows, rounded to a multiple of 128 (32000 against 32128,
    50257 against 50304): one side counts extra ids and pads its table, the other does not."""
    sizes: dict[int, None] = {}
    for line in lines[-MAX_LINES:]:
        if _SHAPE_LINE.search(line):
            sizes.update(dict.fromkeys(int(v) for v in _INT.findall(line) if int(v) >= _MIN_VOCAB))
    values = sorted(sizes)
    for small in values:
        for big in values:
            if big > small and big - small <= _MAX_EXTRA and big % _ALIGN == 0:
                return {"vocab_rows": small, "vocab_padded_rows": big, "vocab_extra": big - small}
    return {}


# pip: "ERROR: torch_xla-2.0-cp39-cp39-linux_x86_64.whl is not a supported wheel on this platform."
_WHEEL = re.compile(
    r"(?P<wheel>[\w.+\-]+?-(?P<tag>cp3(?P<minor>\d+))-[\w]+-[\w.]+\.whl) is not a supported wheel"
)


def wheel_tag_facts(lines: Sequence[str]) -> dict[str, str]:
    """`wheel_file`, `wheel_python_tag` and `wheel_python` (the Python its cp tag names) of a refused
    wheel."""
    for line in lines[-MAX_LINES:]:
        m = _WHEEL.search(line)
        if m is not None:
            return {
                "wheel_file": m["wheel"].rsplit("/", 1)[-1],
                "wheel_python_tag": m["tag"],
                "wheel_python": f"3.{m['minor']}",
            }
    return {}


_CONFIG_FLAG = re.compile(r"'Config' object has no attribute '(?P<flag>jax_\w+)'")
_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def jax_config_flag_facts(lines: Sequence[str]) -> dict[str, str]:
    """`config_flag`: a jax config flag the installed jax does not have; with the installed release printed
    (in any wording crash_versions reads), `jax_installed` and `jax_previous` (the patch release before it,
    where the flag was last seen when it was removed)."""
    tail = lines[-MAX_LINES:]
    flag = next((m["flag"] for m in map(_CONFIG_FLAG.search, tail) if m is not None), None)
    if flag is None:
        return {}
    out = {"config_flag": flag}
    m = _RELEASE.match(package_versions(tail).get("jax", ""))
    if m is not None:
        major, minor, patch = int(m[1]), int(m[2]), int(m[3])
        out["jax_installed"] = f"{major}.{minor}.{patch}"
        if patch > 0:
            out["jax_previous"] = f"{major}.{minor}.{patch - 1}"
    return out


# A library's own deprecation message (jax's `deprecation_getattr` in jax/_src/deprecations.py and the
# `_deprecations` tables of its public modules; the same shape in other libraries): the API's dotted name,
# "was deprecated" or "has been removed", the releases when given, and the name to use instead.
_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_DEPRECATED_API = re.compile(
    rf"`?(?P<old>{_NAME})`?(?:\(\))?\s+(?:"
    r"(?:was|has been|is) deprecated(?: (?:in|as of|since) (?:[A-Za-z]+ )?v?(?P<dep>\d+\.\d+(?:\.\d+)?))?"
    r"(?:,? and (?:has been |was )?removed in (?:[A-Za-z]+ )?v?(?P<rem>\d+\.\d+(?:\.\d+)?))?"
    r"|(?:was|has been) removed in (?:[A-Za-z]+ )?v?(?P<rem2>\d+\.\d+(?:\.\d+)?))"
    # the replacement: a dotted name, or any name in backquotes (not "use the JAX FFI", a phrase)
    rf"[.;,]?\s+(?:[Pp]lease )?(?:[Uu]sed?|[Ss]witch to|[Mm]igrate to)\s+"
    rf"(?:`(?P<quoted>{_NAME})`|(?P<new>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+))"
)


def deprecated_api_facts(lines: Sequence[str]) -> dict[str, str]:
    """`deprecated_api` and `api_replacement`: an API the library's message calls deprecated or removed, and
    the one it says to use; `api_removed_in` / `api_deprecated_in` when it names those releases. The last
    such message wins (the one the program died on)."""
    found = None
    for line in lines[-MAX_LINES:]:
        m = _DEPRECATED_API.search(line)
        if m is not None and (m["new"] or m["quoted"]) != m["old"]:
            found = m
    if found is None:
        return {}
    out = {"deprecated_api": found["old"], "api_replacement": found["new"] or found["quoted"]}
    removed = found["rem"] or found["rem2"]
    if removed:
        out["api_removed_in"] = removed
    if found["dep"]:
        out["api_deprecated_in"] = found["dep"]
    return out


def release_facts(lines: Sequence[str]) -> dict[str, object]:
    """All of this module's facts that the log supports."""
    out: dict[str, object] = {}
    for extract in (vocab_padding_facts, wheel_tag_facts, jax_config_flag_facts, deprecated_api_facts):
        out.update(extract(lines))
    return out
