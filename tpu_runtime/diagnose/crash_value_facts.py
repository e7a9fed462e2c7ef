"""Values a message states that name the fix on their own, read from any wording: a compiled batch size
and the smaller one a call gave it (a last, partial batch), and a value an enumeration does not hold (the
setting of that type to change).

A log left with its category's paragraph often prints exactly these values; the fallbacks of
crash_fix_packs/named_values.yaml turn each into one action naming them (keep every batch at the compiled
size, set the setting to one of the enumeration's members) instead of the paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "VALUE_EXTRACTORS",
    "argument_type_facts",
    "custom_op_facts",
    "enum_value_facts",
    "missing_tokenizer_facts",
    "nnx_static_data_facts",
    "partial_batch_facts",
    "snake_case",
]

MAX_LINES = 4000

# ------------------------------------------------------------------------------ a partial last batch

# a shape in XLA's (bf16[8,128]{1,0}), NumPy's ((8, 128)), PyTorch's (torch.Size([8, 128])) or a list's
# notation
_SHAPE = r"(?:\b[a-z]+\d*)?(?:Size\(\[|[\[(])(?P<{0}>\d+(?:, ?\d+)+)[\])]"
_EXPECTED_THEN_GOT = re.compile(
    r"(?i)\bexpect(?:ed|s|ing)?\b[^\n]{0,40}?"
    + _SHAPE.format("expected")
    + r"[^\n]{0,80}?\b(?:got|given|received|found|passed)\b[^\n]{0,40}?"
    + _SHAPE.format("got")
)
_GOT_THEN_EXPECTED = re.compile(
    r"(?i)\b(?:got|given|received|passed)\b[^\n]{0,40}?"
    + _SHAPE.format("got")
    + r"[^\n]{0,60}?\bexpect(?:ed|s|ing)?\b[^\n]{0,40}?"
    + _SHAPE.format("expected")
)


def _dims(text: str) -> list[int]:
    return [int(d) for d in text.replace(" ", "").split(",")]


def partial_batch_facts(lines: Sequence[str]) -> dict[str, object]:
    """`batch_compiled`, `batch_given` and `batch_shape`: an expected shape and a given one that agree but for
    a smaller leading dimension (both of two or more dimensions). A program compiled for one batch size and
    handed fewer rows is the last batch of a dataset whose size the batch does not divide; a difference
    anywhere else, or a larger leading dimension, is some other mismatch and gives nothing."""
    for line in reversed(lines[-MAX_LINES:]):
        for pattern in (_EXPECTED_THEN_GOT, _GOT_THEN_EXPECTED):
            m = pattern.search(line)
            if m is None:
                continue
            expected, got = _dims(m["expected"]), _dims(m["got"])
            if len(expected) == len(got) and expected[1:] == got[1:] and 0 < got[0] < expected[0]:
                return {
                    "batch_compiled": expected[0],
                    "batch_given": got[0],
                    "batch_shape": f"({', '.join(str(d) for d in expected)})",
                }
    return {}


# ------------------------------------------------------------------------------ a value an enum lacks

# Python's Enum lookup: "ValueError: 'TPU' is not a valid DistributedType"; transformers' ExplicitEnum prints
# the value bare ("tpu is not a valid IntervalStrategy, please select one of [...]")
_NOT_A_MEMBER = re.compile(
    r"(?:'(?P<quoted>[^'\n]{1,60})'|\"(?P<dquoted>[^\"\n]{1,60})\"|(?<![\w'\"])(?P<bare>[\w.-]{1,60}))"
    r" is not a valid "
    r"(?P<enum>[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b"
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(name: str) -> str:
    """DistributedType -> distributed_type, HTTPMode -> http_mode: the name a setting of an enumeration's
    type usually has in a config file or a keyword argument."""
    return _CAMEL.sub("_", name).lower()


def enum_value_facts(lines: Sequence[str]) -> dict[str, object]:
    """`enum_value`, `enum_class` and `enum_setting`: a value looked up in an enumeration that has no such
    member. The value came from a setting (a config file, a flag, an argument) written for another release or
    misspelt; the setting is named after the class by convention, so `enum_setting` is that guess, said as
    one in the fix."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _NOT_A_MEMBER.search(line)
        if m is not None:
            value = m["quoted"] or m["dquoted"] or m["bare"]
            return {"enum_value": value, "enum_class": m["enum"], "enum_setting": snake_case(m["enum"])}
    return {}


# ------------------------------------------------------------------------------ a custom op not registered

# torch.ops.<namespace>.<op> looked up before anything registered it: "'_OpNamespace' 'xla' object has no
# attribute 'gmm'", or the dispatcher's "No such operator xla::gmm"
_NO_OP = re.compile(
    r"'_OpNamespace' '(?P<ns>\w+)' object has no attribute '(?P<op>\w+)'"
    r"|No such operator (?P<ns2>\w+)::(?P<op2>\w+)"
)
# the namespaces whose custom ops one known module registers on import (torch_xla's Pallas kernels: gmm,
# paged_attention, flash_attention and the like are defined in torch_xla/experimental/custom_kernel.py)
_REGISTRARS = {"xla": "torch_xla.experimental.custom_kernel"}


def custom_op_facts(lines: Sequence[str]) -> dict[str, object]:
    """`custom_op` (namespace::name) and, where one module is known to register that namespace's kernels,
    `custom_op_module`: a torch custom op exists only once the module that defines it has been imported, so
    a lookup before that import (or on a release without it) fails with these wordings."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _NO_OP.search(line)
        if m is not None:
            ns, op = m["ns"] or m["ns2"], m["op"] or m["op2"]
            out: dict[str, object] = {"custom_op": f"{ns}::{op}", "custom_op_namespace": ns}
            if ns in _REGISTRARS:
                out["custom_op_module"] = _REGISTRARS[ns]
            return out
    return {}


# ------------------------------------------------------------------------------ Flax NNX static data

# Flax 0.12's NNX pytrees: "Found unexpected data on value of type <class 'list'> in static attribute
# 'rope_generators' of Pytree type ...", often broken over two lines
_NNX_STATIC = re.compile(
    r"unexpected data on value of type <class '(?P<type>[\w.]+)'> in static attribute\s+'(?P<attr>\w+)'"
)


def nnx_static_data_facts(lines: Sequence[str]) -> dict[str, object]:
    """`nnx_attribute` and `nnx_value_type`: an attribute of an NNX module holding arrays or modules that
    Flax treats as static (not part of the pytree's data), refused from Flax 0.12 on."""
    m = _NNX_STATIC.search("\n".join(lines[-200:]))
    if m is None:
        return {}
    return {"nnx_attribute": m["attr"], "nnx_value_type": m["type"]}


# ------------------------------------------------------------------------------ a tokenizer not found

# transformers' AutoTokenizer: "OSError: Can't load tokenizer for 'org/model'. ..." (or a placeholder)
_NO_TOKENIZER = re.compile(r"Can't load tokenizer for '?(?P<model>[^'\s.][^'\s]*?)'?(?:\.\s|\.?$|\s)")


def missing_tokenizer_facts(lines: Sequence[str]) -> dict[str, object]:
    """`tokenizer_of`: the model name or path whose tokenizer files could not be loaded (the checkpoint has
    none, or the name points at a local folder without them)."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _NO_TOKENIZER.search(line)
        if m is not None:
            return {"tokenizer_of": m["model"]}
    return {}


# ------------------------------------------------------------------------------ an argument of another type

# "Expect weight to be SparseTensor type but got <class '...SymbolicTensor'>", "Expected `x` to be a
# RaggedTensor, but got Tensor": the type named with a capital, so a value's property ("to be positive") is
# not read as one
_ARG_TYPE = re.compile(
    r"\bExpect(?:ed|s)?\s+(?:the\s+)?[`'\"]?(?P<arg>[A-Za-z_]\w*)[`'\"]?\s+to\s+be\s+(?:an?\s+|of\s+)?"
    r"(?:type\s+)?[`'\"]?(?P<type>[A-Z][\w.]*)[`'\"]?(?:\s+type)?,?\s+but\s+(?:got|received|found|was)\s+"
    r"(?:an?\s+)?(?:<class\s+'(?:[\w]+\.)*(?P<cls>\w+)'>|[`'\"]?(?P<word>[A-Za-z_][\w.]*))"
)


def argument_type_facts(lines: Sequence[str]) -> dict[str, object]:
    """`typed_argument`, `required_type` and `given_type`: an argument a check requires to be of one class
    (a SparseTensor, a RaggedTensor) and the class it was given."""
    for line in reversed(lines[-MAX_LINES:]):
        m = _ARG_TYPE.search(line)
        if m is not None:
            given = m["cls"] or (m["word"] or "").rsplit(".", 1)[-1]
            if given and given != m["type"].rsplit(".", 1)[-1]:
                return {"typed_argument": m["arg"], "required_type": m["type"], "given_type": given}
    return {}


VALUE_EXTRACTORS: tuple[Callable[[Sequence[str]], Mapping[str, object]], ...] = (
    partial_batch_facts,
    enum_value_facts,
    custom_op_facts,
    nnx_static_data_facts,
    missing_tokenizer_facts,
    argument_type_facts,
)
