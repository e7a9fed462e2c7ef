"""Planted bug: the ring shift starts its remote DMA and never waits for it."""

from ring_shift import DEFAULTS, DTYPES, SHAPES, SPACE, TARGET_SHAPE, build, make_inputs, reference

MESH = {"x": 4}
kernel = build(wait=False)
__all__ = [
    "DEFAULTS",
    "DTYPES",
    "MESH",
    "SHAPES",
    "SPACE",
    "TARGET_SHAPE",
    "kernel",
    "make_inputs",
    "reference",
]
