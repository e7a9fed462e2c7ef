"""Sizes and durations as logs print them ("21.95G", "256.00MiB", "1.7K", "09s969ms486.408us")."""

from __future__ import annotations

import re

# XLA (HumanReadableNumBytes), the Linux kernel ("kB") and PyTorch print binary multiples, with or
# without "i" and "B"; so a bare "G" or "GB" is read as 2**30 here.
_SCALE = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40, "P": 2**50, "E": 2**60}
_SIZE = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(?P<unit>[KMGTPE]?)(?:i?B|b)?\s*$", re.I)
_DURATION_PART = re.compile(r"(?P<num>\d+(?:\.\d+)?)(?P<unit>us|µs|ms|s|m|h|d)")
_DURATION_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_size(text: str) -> int | None:
    """Bytes in a size such as '21.95G', '1.7K', '256.00MiB', '268435456B', '1234kB'; None if not a size."""
    m = _SIZE.match(text)
    if m is None:
        return None
    return round(float(m["num"]) * _SCALE[m["unit"].upper()])


def parse_duration(text: str) -> float | None:
    """Seconds in a duration such as '09s969ms486.408us', '1m02s', '186ms062.970us'; None if not one."""
    compact = text.strip().replace(" ", "")
    parts = list(_DURATION_PART.finditer(compact))
    if not parts or "".join(p.group(0) for p in parts) != compact:
        return None
    return sum(float(p["num"]) * _DURATION_SECONDS[p["unit"]] for p in parts)
