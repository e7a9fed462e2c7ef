"""The operand facts of a failing op: its narrow element type (and the type to cast it to), the tiling its
blocks must divide by, the multiple an index must be proven to be, an index outside the table it indexes,
and an op the device backend has no kernel for.

Mosaic (the Pallas TPU compiler) rejects many ops on 8- and 16-bit vectors that it compiles on 32-bit
ones, and the remedy maintainers give is the same across wordings ("failed to legalize 'arith.shrui'",
"Unsupported type in transpose", "Only 32-bit types supported", "Invalid vector type for load"): cast the
operands to a type the chip handles for that op before it, and back after. The message itself names the
type only inside the MLIR types it prints (`vector<128x128xi8>`, `memref<1x1024x256xf16, ...>`), so this
reads those, from any wording, and states the cast (facts `operand_dtype`, `operand_dtype_name`, `cast_to`).

Type rules (jax's Pallas TPU guide, https://docs.jax.dev/en/latest/pallas/tpu/details.html: 32-bit types
are the general case; bf16 is the native 16-bit float): integers narrower than 32 bits widen to int32,
float16 and 8-bit floats to bfloat16, bfloat16 to float32.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "backend_only_facts",
    "backend_op_facts",
    "index_range_facts",
    "narrow_dtype_facts",
    "size_one_stretch_facts",
    "tiling_facts",
]

# the element type at the end of an MLIR vector or memref type: vector<8x128x4xi8>, memref<1x1024xf16, ...>
_MLIR_ELEMENT = re.compile(r"\b(?:vector|memref)<(?:[\d?]+x)*(?P<dtype>[a-z]+\d*(?:E\d+M\d+\w*)?)[,>\s]")
# a line of an MLIR operation or of an error that talks about types; an operation with no result (a store,
# a DMA start) is printed in generic form without the `%N = ` before its quoted name (diag96)
_TYPE_CONTEXT = re.compile(
    r'%\S+ = "|^\s*"[a-z_]+\.[\w.]+"\(|unsupported|not implemented|failed to legalize|only 32-bit|'
    r"invalid vector type|does not support|unsupported .*type|type in",
    re.IGNORECASE,
)
# (MLIR element type, name in jax.numpy, the type to cast to)
_WIDEN: dict[str, tuple[str, str]] = {
    "i1": ("bool", "int32"),
    "i4": ("int4", "int32"),
    "i8": ("int8", "int32"),
    "ui8": ("uint8", "int32"),
    "i16": ("int16", "int32"),
    "f16": ("float16", "bfloat16"),
    "bf16": ("bfloat16", "float32"),
}
_FP8 = re.compile(r"^f8E\d+M\d+", re.IGNORECASE)
MAX_LINES = 4000


def narrow_dtype_facts(lines: Sequence[str]) -> dict[str, str]:
    """`operand_dtype` (MLIR name), `operand_dtype_name` (jax.numpy name) and `cast_to` for the first narrow
    element type printed on an MLIR-op or error line near the end of the log; {} when there is none."""
    for line in reversed(lines[-MAX_LINES:]):
        if not _TYPE_CONTEXT.search(line):
            continue
        for m in _MLIR_ELEMENT.finditer(line):
            dtype = m["dtype"]
            if dtype in _WIDEN:
                name, cast = _WIDEN[dtype]
                return {"operand_dtype": dtype, "operand_dtype_name": name, "cast_to": cast}
            if _FP8.match(dtype):
                return {"operand_dtype": dtype, "operand_dtype_name": "float8", "cast_to": "bfloat16"}
    return {}


# "Operand of shape (..., 16, 256) has tiling (16, 128), but its block shape (..., 8, 256) is not divisible"
_TILING = re.compile(r"\btiling \((?P<tiling>\d+, ?\d+)\)")
_BLOCK = re.compile(r"\bblock shape \((?P<block>[^()]*)\)")
# "cannot statically prove that index in dimension 1 is a multiple of 128"
_PROVE_MULTIPLE = re.compile(
    r"prove that (?:the )?index in dimension (?P<dim>\d+) is a multiple of (?P<multiple>\d+)"
)


def tiling_facts(lines: Sequence[str]) -> dict[str, str]:
    """`required_tiling` (and `block_shape`) where Mosaic states the tiling a block must divide by;
    `index_multiple` (and `index_dim`) where it cannot prove an index is a multiple of a tile size."""
    out: dict[str, str] = {}
    for line in reversed(lines[-MAX_LINES:]):
        tiling = _TILING.search(line)
        if tiling is not None and "required_tiling" not in out:
            out["required_tiling"] = f"({tiling['tiling'].replace(' ', '').replace(',', ', ')})"
            block = _BLOCK.search(line)
            if block is not None:
                out["block_shape"] = f"({block['block']})"
        prove = _PROVE_MULTIPLE.search(line)
        if prove is not None and "index_multiple" not in out:
            out["index_multiple"], out["index_dim"] = prove["multiple"], prove["dim"]
    return out


# "indices[85,26] = 33764 is not in [0, 33708)" (TensorFlow/XLA gather), "index 33764 is out of bounds for
# dimension 0 with size 33708" (PyTorch, NumPy)
_INDEX_RANGE = (
    re.compile(r"indices\[[\d, ]*\] = (?P<index>-?\d+) is not in \[0, (?P<size>\d+)\)"),
    re.compile(r"index (?P<index>-?\d+) is out of bounds for (?:dimension|axis) \d+ with size (?P<size>\d+)"),
)
# "Could not run 'torchvision::nms' with arguments from the 'XLA' backend"
_NO_BACKEND_KERNEL = re.compile(
    r"Could not run '(?P<op>[\w:.]+)' with arguments from the '(?P<backend>\w+)' backend"
)


def index_range_facts(lines: Sequence[str]) -> dict[str, int]:
    """`bad_index` and `table_size` where a gather or indexing error states both."""
    for line in reversed(lines[-MAX_LINES:]):
        for pattern in _INDEX_RANGE:
            m = pattern.search(line)
            if m is not None:
                return {"bad_index": int(m["index"]), "table_size": int(m["size"])}
    return {}


# "Unimplemented primitive in Pallas TPU lowering for KernelType.TC: cumsum." (older jax: no "for ...")
_NO_PALLAS_LOWERING = re.compile(
    r"Unimplemented primitive in Pallas (?P<backend>\w+) lowering(?: for [\w.]+)?: (?P<op>\w+)"
)


# jax's wording for a primitive lowered for some platforms only (jax/_src/lax/linalg.py): "Singular value
# decomposition is only implemented on the CPU and GPU backends", "Nonsymmetric eigendecomposition is only
# implemented on the CPU backend". Later jax releases add TPU lowerings to such ops (SVD gained one in
# https://github.com/jax-ml/jax/pull/3334), so the list of backends is that release's, not a law.
_ONLY_ON_BACKENDS = re.compile(
    r"(?P<op>[A-Za-z][\w-]*(?: [\w-]+){0,5}?) (?:is|are) only (?:implemented|supported|available) (?:on|for) "
    r"(?:the )?(?P<backends>(?:CPU|GPU|CUDA|ROCm)(?:(?:,| and| or|/) ?(?:CPU|GPU|CUDA|ROCm))*) backends?\b"
)


def backend_only_facts(lines: Sequence[str]) -> dict[str, str]:
    """`backend_only_op` and `implementing_backends` where a message says an op is implemented only on the
    backends it lists (none of them the TPU)."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _ONLY_ON_BACKENDS.search(line)
        if m is not None:
            op = re.sub(r"^(?:Currently|Presently) ", "", m["op"])  # a sentence's adverb is not the op
            return {"backend_only_op": op, "implementing_backends": m["backends"]}
    return {}


def backend_op_facts(lines: Sequence[str]) -> dict[str, str]:
    """`missing_kernel_op` and `missing_kernel_backend` where PyTorch's dispatcher found no kernel for an op
    or Pallas found no lowering rule for a primitive (backend `Pallas TPU`)."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _NO_BACKEND_KERNEL.search(line)
        if m is not None:
            return {"missing_kernel_op": m["op"], "missing_kernel_backend": m["backend"]}
        m = _NO_PALLAS_LOWERING.search(line)
        if m is not None:
            return {"missing_kernel_op": m["op"], "missing_kernel_backend": f"Pallas {m['backend']}"}
    return {}


# A shape as a check prints it: "(8, 1, 2048, 2048)", or with its sizes named as f"{name=}" writes them,
# "(batch_size=8, num_heads=16, q_seq_len=2048, kv_seq_len=2048)".
_SHAPE = r"\((?:\s*(?:[A-Za-z_]\w*\s*=\s*)?\d+\s*,)*\s*(?:[A-Za-z_]\w*\s*=\s*)?\d+\s*,?\s*\)"
# "expected <shape>, got <shape>" and its variants, in either order
_EXPECTED_GOT = (
    re.compile(
        rf"(?i)\bexpected\b[^\n()]{{0,60}}(?P<expected>{_SHAPE})[^\n()]{{0,40}}?"
        rf"\b(?:got|found|received|but is|but was|instead got)\b[^\n()]{{0,20}}(?P<given>{_SHAPE})"
    ),
    re.compile(
        rf"(?i)\b(?:got|found|received)\b[^\n()]{{0,20}}(?P<given>{_SHAPE})[^\n()]{{0,40}}?"
        rf"\b(?:expected|but expected|while expecting)\b[^\n()]{{0,20}}(?P<expected>{_SHAPE})"
    ),
)
_SIZE = re.compile(r"(\d+)\s*(?:,|\)$)")


def _sizes(shape: str) -> list[int]:
    """The sizes of a printed shape, its names dropped."""
    return [int(s) for s in _SIZE.findall(shape.replace(" ", ""))]


def size_one_stretch_facts(lines: Sequence[str]) -> dict[str, str]:
    """`stretch_expected_shape`, `stretch_given_shape` and `stretch_axes` where a check printed the shape it
    expected and the one it got, of one rank, and every axis where they differ is of size 1 in the one it got:
    a value left to be broadcast to a function that takes the full shape and does not broadcast it."""
    for line in reversed(lines[-MAX_LINES:]):
        for pattern in _EXPECTED_GOT:
            m = pattern.search(line)
            if m is None:
                continue
            expected, given = _sizes(m["expected"]), _sizes(m["given"])
            if len(expected) != len(given) or expected == given:
                continue
            axes = [i for i, (e, g) in enumerate(zip(expected, given, strict=True)) if e != g]
            if all(given[i] == 1 for i in axes):
                return {
                    "stretch_expected_shape": "(" + ", ".join(map(str, expected)) + ")",
                    "stretch_given_shape": "(" + ", ".join(map(str, given)) + ")",
                    "stretch_axes": ", ".join(map(str, axes)),
                }
    return {}
