"""The TPU vector tile, in one place: the kernel checker's VMEM model and crash triage's padded-layout fact
both pad a shape to it, and must agree.

A tile is 128 lanes by 8 sublanes of 32 bits; narrower types pack more rows into a sublane (16 for 16-bit,
32 for 8-bit), so the second-minor multiple grows as the element narrows.
"""

from __future__ import annotations

from collections.abc import Sequence

LANES = 128
SUBLANES_32BIT = 8


def tile_for(bits: int) -> tuple[int, int]:
    """(sublanes, lanes) of the tile holding elements of `bits` bits."""
    return SUBLANES_32BIT * max(1, 32 // bits), LANES


def tile_padded(dims: Sequence[int], bits: int) -> tuple[int, ...]:
    """`dims` with the minor dimension rounded up to whole lanes and the second-minor (when there is one)
    to whole sublanes of the element's tile."""
    sublanes, lanes = tile_for(bits)
    padded = [int(d) for d in dims]
    padded[-1] = -(-padded[-1] // lanes) * lanes
    if len(padded) >= 2:
        padded[-2] = -(-padded[-2] // sublanes) * sublanes
    return tuple(padded)
