"""Planted bug: the ring shift sends each shard to its left neighbour instead of its right one."""

from ring_shift import *  # noqa: F403 (the ring shift's convention names; `kernel` is replaced below)
from ring_shift import build

MESH = {"x": 4}  # again here, literally: `kernel check` reads it from this file without importing it
kernel = build(step=-1)
