"""Planted bug: the ring shift starts its remote DMA and never waits for it."""

from ring_shift import *  # noqa: F403 (the ring shift's convention names; `kernel` is replaced below)
from ring_shift import build

MESH = {"x": 4}  # again here, literally: `kernel check` reads it from this file without importing it
kernel = build(wait=False)
