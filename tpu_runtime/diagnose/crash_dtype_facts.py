"""Two element types a check set against each other, read from the wordings libraries share.

A dtype error's remedy depends on which two types met, not on the library's sentence: two widths of one
kind (s32 and s64, f32 and f64) at a compiled executable's argument mean jax's x64 mode changed between
tracing and the call; two integer widths meeting in one op want the narrower index cast up to int64 (the
PyTorch index default); a module's input in one float type and its weights in another want the model
loaded in one dtype; a check that lists the dtypes it accepts wants a value of one of them. This reads
the pair (or the accepted list) from XLA's and PJRT's shape strings (`want f32[...], got f64[...]`,
`S64 vs S32`), PyTorch's `Input type (X) and weight type (Y)` and accepted-dtype checks (`Expected
attn_mask dtype to be bool or float ...`, `dtype argument to `normal` must be a float or complex dtype`),
and names the dtypes in words the fix packs quote (`crash_fix_packs/cast_dtype_pairs.yaml`).

Type names: XLA's PrimitiveType short names (s32, f64, bf16, pred, c64;
https://github.com/openxla/xla/blob/main/xla/xla_data.proto) and PyTorch's C++ scalar type names
(Float, Half, c10::Half, long int; https://docs.pytorch.org/docs/stable/tensor_attributes.html).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["dtype_name", "dtype_pair_facts"]

MAX_LINES = 4000

# name as printed (lowered, `c10::`/`torch.` and `jnp.`/`np.` prefixes dropped) -> the NumPy-style name
_NAMES: dict[str, str] = {
    "pred": "bool",
    "bool": "bool",
    "s8": "int8",
    "s16": "int16",
    "s32": "int32",
    "s64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "long": "int64",
    "long int": "int64",
    "unsigned char": "uint8",
    "signed char": "int8",
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
    "bfloat16": "bfloat16",
    "complexfloat": "complex64",
    "complexdouble": "complex128",
    **{f"int{w}": f"int{w}" for w in (8, 16, 32, 64)},
    **{f"uint{w}": f"uint{w}" for w in (8, 16, 32, 64)},
    **{f"float{w}": f"float{w}" for w in (16, 32, 64)},
    "complex64": "complex64",
    "complex128": "complex128",
}
_KIND = re.compile(r"^(?P<kind>bool|u?int|b?float|complex)(?P<bits>\d*)$")

# XLA/PJRT's check of a compiled executable's argument: "Argument does not match host shape or layout of
# computation parameter 0: want f32[169000,4]{1,0}, got f64[169000,4]{1,0}", "Executable expected shape
# f32[8,128]{1,0} for argument 0 but got incompatible shape f64[8,128]{1,0}"
_HLO = r"(?P<{0}>pred|[suf]\d+|bf16|c64|c128)\["
_HLO_TAIL = r"[^\]\n]*\]"  # the dimensions after the element type
_ARGUMENT_PAIR = re.compile(
    r"\b(?:parameter|argument)\b[^\n]{0,80}?\bwant "
    + _HLO.format("want")
    + _HLO_TAIL
    + r"(?:\{[^}\n]*\})?, got "
    + _HLO.format("got")
    + r"|\bexpected shape "
    + _HLO.format("want2")
    + _HLO_TAIL
    + r"\S* for argument \d+ but got (?:incompatible shape )?"
    + _HLO.format("got2"),
    re.IGNORECASE,
)
# two element types one op received: XLA's "Cannot concatenate arrays with different element types:
# S64 vs S32", "... element types ...: f32 vs bf16"
_ELEMENT = r"pred|[suf]\d+|bf16|c64|c128"
_ELEMENT_PAIR = re.compile(
    rf"\belement types?\b[^\n]{{0,60}}?:\s*(?P<a>{_ELEMENT})\s+vs\.?\s+(?P<b>{_ELEMENT})\b",
    re.IGNORECASE,
)
# PyTorch's convolution check: "Input type (float) and bias type (c10::Half) should be the same",
# "Input type (torch.FloatTensor) and weight type (torch.cuda.HalfTensor) should be the same"
_MODULE_PAIR = re.compile(
    r"\bInput type \((?P<input>[\w:. ]+?)\) and (?P<param>weight|bias) type "
    r"\((?P<param_type>[\w:. ]+?)\) should be the same"
)
# a check that lists the dtypes it takes: "Expected attn_mask dtype to be bool or float or to match query
# dtype, but got attn_mask.dtype: long int", "dtype argument to `normal` must be a float or complex dtype,
# got int32"
_DTYPE_WORD = r"(?:bool|boolean|float(?:ing)?(?:[- ]point)?|integer|int|complex|signed|unsigned)"
_GOT = r"(?:long |unsigned |signed )?[\w:]+(?:\.\w+)*"
_ACCEPTED = re.compile(
    rf"\bExpected (?P<arg>\w+) dtype to be "
    rf"(?P<list>{_DTYPE_WORD}(?:,? or (?:{_DTYPE_WORD}|to match \w+ dtype))*)"
    rf"[^\n]*?\bbut got (?:\w+\.dtype:?\s*)?(?P<got>{_GOT})"
    rf"|\bdtype (?:argument )?(?:to|of|for) `?(?P<fn>\w+)`? must be (?:an? )?"
    rf"(?P<list2>{_DTYPE_WORD}(?:,? or {_DTYPE_WORD})*) (?:dtype|type)s?,? (?:but )?got (?P<got2>[\w:.]+)",
    re.IGNORECASE,
)
_WORDS = re.compile(rf"\b{_DTYPE_WORD}\b", re.IGNORECASE)


def dtype_name(printed: str) -> str | None:
    """The NumPy-style name of a dtype as a library prints it (`s64`, `c10::Half`, `long int`,
    `torch.cuda.HalfTensor`); None for a word that is no dtype."""
    key = printed.strip().lower()
    for prefix in ("c10::", "torch.cuda.", "torch.", "jnp.", "np.", "numpy."):
        key = key.removeprefix(prefix)
    if key.endswith("tensor") and key != "tensor":
        key = key.removesuffix("tensor")
    return _NAMES.get(key)


def _kind_bits(name: str) -> tuple[str, int]:
    m = _KIND.match(name)
    if m is None:
        return name, 0
    return m["kind"], int(m["bits"] or 0)


def _pair(first: str, second: str) -> dict[str, str]:
    """`dtype_first`, `dtype_second` and, when both are of one kind in two widths, `dtype_kind`,
    `dtype_narrow` and `dtype_wide`."""
    a, b = dtype_name(first), dtype_name(second)
    if a is None or b is None or a == b:
        return {}
    out = {"dtype_first": a, "dtype_second": b}
    (kind_a, bits_a), (kind_b, bits_b) = _kind_bits(a), _kind_bits(b)
    if kind_a == kind_b and kind_a in ("int", "uint", "float", "complex") and bits_a and bits_b:
        out["dtype_kind"] = {"int": "integer", "uint": "unsigned integer"}.get(kind_a, kind_a)
        out["dtype_narrow"], out["dtype_wide"] = (a, b) if bits_a < bits_b else (b, a)
    return out


def dtype_pair_facts(lines: Sequence[str]) -> dict[str, str]:
    """Facts of the last line near the end of the log that sets two dtypes against each other.

    `argument_dtype_want` / `argument_dtype_got` (with the pair facts of `_pair`): a compiled executable's
    argument; `element_dtype_pair`: two element types one op received; `module_input_dtype` /
    `module_param_dtype` / `module_param`: a torch module's input and its weight or bias;
    `accepted_dtypes`, `accepted_dtype_first`, `refused_dtype` and `dtype_checked`: a check that lists the
    dtypes it takes. {} when no line does."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _ARGUMENT_PAIR.search(line)
        if m is not None:
            want, got = m["want"] or m["want2"], m["got"] or m["got2"]
            pair = _pair(want, got)
            if pair:
                return {
                    **pair,
                    "argument_dtype_want": pair["dtype_first"],
                    "argument_dtype_got": pair["dtype_second"],
                }
        m = _ELEMENT_PAIR.search(line)
        if m is not None:
            pair = _pair(m["a"], m["b"])
            if pair:
                return {**pair, "element_dtype_pair": f"{pair['dtype_first']} and {pair['dtype_second']}"}
        m = _MODULE_PAIR.search(line)
        if m is not None:
            pair = _pair(m["input"], m["param_type"])
            if pair:
                return {
                    **pair,
                    "module_input_dtype": pair["dtype_first"],
                    "module_param_dtype": pair["dtype_second"],
                    "module_param": m["param"],
                }
        m = _ACCEPTED.search(line)
        if m is not None:
            listed = m["list"] or m["list2"]
            words = [w for w in _WORDS.findall(listed) if w.lower() != "signed"]
            got = dtype_name(m["got"] or m["got2"] or "")
            if words and got is not None:
                first = words[0].lower()
                first = {"boolean": "bool", "floating": "float", "int": "integer"}.get(first, first)
                first = "float" if first.startswith("float") else first
                return {
                    "accepted_dtypes": " or ".join(w.lower() for w in words),
                    "accepted_dtype_first": first,
                    "refused_dtype": got,
                    "dtype_checked": m["arg"] or f"`{m['fn']}`'s dtype argument",
                }
    return {}
