"""Just enough of the ONNX protobuf format to write an inference graph, with no imports beyond numpy and
the project's wire-format helpers.

The wire format itself (varints, fields) is `tpu_runtime.protowire`, which the profile reader also uses.
Why not the `onnx` package: importing it loads ml_dtypes, measured at 5-6 s on the 2-core build machine
(about a tenth of the whole build's time budget) for what is a few dozen lines of wire format here. The
messages and field numbers are those of onnx.proto (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto);
a test parses the output with the `onnx` package where it is installed.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import numpy as np

from tpu_runtime.protowire import bytes_field, int_field, str_field, varint

IR_VERSION = 8  # ONNX 1.10+, the version that goes with opset 17
FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7  # TensorProto.DataType
_DTYPES = {
    np.dtype(np.float32): FLOAT,
    np.dtype(np.uint8): UINT8,
    np.dtype(np.int8): INT8,
    np.dtype(np.int32): INT32,
    np.dtype(np.int64): INT64,
}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    """An AttributeProto: a float, an int, or a list of ints."""
    if isinstance(value, float):
        body = str_field(1, name) + varint(2 << 3 | 5) + struct.pack("<f", value) + int_field(20, _ATTR_FLOAT)
    elif isinstance(value, int):
        body = str_field(1, name) + int_field(3, value) + int_field(20, _ATTR_INT)
    else:
        body = str_field(1, name) + b"".join(int_field(8, v) for v in value) + int_field(20, _ATTR_INTS)
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
    body = b"".join(str_field(1, i) for i in inputs) + b"".join(str_field(2, o) for o in outputs)
    body += str_field(3, name) + str_field(4, op)
    body += b"".join(bytes_field(5, attribute(key, value)) for key, value in attrs.items())
    if domain:
        body += str_field(7, domain)
    return body


def tensor(name: str, array: np.ndarray) -> bytes:
    """A TensorProto holding `array` as little-endian raw data."""
    dtype = _DTYPES[array.dtype]
    body = b"".join(int_field(1, d) for d in array.shape) + int_field(2, dtype) + str_field(8, name)
    return body + bytes_field(9, np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes())


def value_info(name: str, elem_type: int, shape: Sequence[int | str]) -> bytes:
    """A ValueInfoProto for a graph input or output; a str dimension is symbolic (dynamic)."""
    dims = b"".join(bytes_field(1, str_field(2, d) if isinstance(d, str) else int_field(1, d)) for d in shape)
    tensor_type = int_field(1, elem_type) + bytes_field(2, dims)
    return str_field(1, name) + bytes_field(2, bytes_field(1, tensor_type))


def model(
    name: str,
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: dict[str, int],
) -> bytes:
    """A serialised ModelProto with one graph."""
    graph = b"".join(bytes_field(1, n) for n in nodes) + str_field(2, name)
    graph += b"".join(bytes_field(5, t) for t in initializers)
    graph += b"".join(bytes_field(11, v) for v in inputs) + b"".join(bytes_field(12, v) for v in outputs)
    opset_ids = b"".join(
        bytes_field(8, (str_field(1, d) if d else b"") + int_field(2, v)) for d, v in opsets.items()
    )
    return int_field(1, IR_VERSION) + str_field(2, "tpu-agent") + bytes_field(7, graph) + opset_ids
