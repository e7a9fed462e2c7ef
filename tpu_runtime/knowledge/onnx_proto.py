"""Just enough of the ONNX protobuf format to write an inference graph, with no imports beyond numpy.

Why not the `onnx` package: importing it loads ml_dtypes, measured at 5-6 s on the 2-core build machine
(about a tenth of the whole build's time budget) for what is a few dozen lines of wire format here. The
messages and field numbers are those of onnx.proto (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto);
a test parses the output with the `onnx` package where it is installed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

IR_VERSION = 8  # ONNX 1.10+, the version that goes with opset 17
FLOAT, INT32, INT64 = 1, 6, 7  # TensorProto.DataType
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values are written as ten-byte two's complement
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(value)) + value


def _str(field: int, value: str) -> bytes:
    return _bytes(field, value.encode())


def attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    """An AttributeProto: a float, an int, or a list of ints."""
    if isinstance(value, float):
        body = _str(1, name) + _varint(2 << 3 | 5) + struct.pack("<f", value) + _int(20, _ATTR_FLOAT)
    elif isinstance(value, int):
        body = _str(1, name) + _int(3, value) + _int(20, _ATTR_INT)
    else:
        body = _str(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _ATTR_INTS)
    return body


def node(
    op: str,
    inputs: Iterable[str],
    outputs: Iterable[str],
    name: str,
    domain: str = "",
    **attrs: float | int | Sequence[int],
) -> bytes:
    """A NodeProto."""
    body = b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
    body += _str(3, name) + _str(4, op)
    body += b"".join(_bytes(5, attribute(key, value)) for key, value in attrs.items())
    if domain:
        body += _str(7, domain)
    return body


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding `array` as little-endian raw data."""
    dtype = _DTYPES[array.dtype]
    body = b"".join(_int(1, d) for d in array.shape) + _int(2, dtype) + _str(8, name)
    return body + _bytes(9, np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes())


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto for a graph input or output; a str dimension is symbolic (dynamic)."""
    dims = b"".join(_bytes(1, _str(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, elem_type) + _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    name: str,
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A serialised ModelProto with one graph."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _str(2, name)
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    opset_ids = b"".join(_bytes(8, (_str(1, d) if d else b"") + _int(2, v)) for d, v in opsets.items())
    return _int(1, IR_VERSION) + _str(2, "tpu-agent") + _bytes(7, graph) + opset_ids
