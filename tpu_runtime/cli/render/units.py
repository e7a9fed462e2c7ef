"""Figures in the units every report quotes them in."""

from __future__ import annotations

__all__ = ["fmt_bytes"]


def fmt_bytes(n: int | None) -> str:
    """Binary units, GiB for anything from 1 GiB up (the unit HBM is quoted in)."""
    if n is None:
        return "—"
    size = float(n)
    for unit, scale in (("TiB", 2.0**40), ("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(size) >= scale:
            return f"{size / scale:.2f} {unit}"
    return f"{int(size)} B"
