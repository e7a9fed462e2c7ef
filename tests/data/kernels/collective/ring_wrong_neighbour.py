"""Planted bug: the ring shift sends each shard to its left neighbour instead of its right one."""

from ring_shift import DEFAULTS, DTYPES, SHAPES, SPACE, TARGET_SHAPE, build, make_inputs, reference

MESH = {"x": 4}
kernel = build(step=-1)
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
