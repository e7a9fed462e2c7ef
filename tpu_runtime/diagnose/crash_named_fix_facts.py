"""Facts that name their own fix, read from any wording: the padded layout an unaligned kernel operand needs,
a size that must be a multiple of another (and the size it rounds up to), the two device counts a program
and its machine disagree on, a TPU host whose chips libtpu cannot see or cannot recognise, and the framework
whose internal check failed.

A log in a wording no cause-specific sub-rule was written for still states these numbers and names; the
fallbacks of crash_fix_packs/named_facts.yaml turn each into one specific action (pad this vector to that
shape, round this size up, build the mesh of that many devices, upgrade libtpu, update torch_xla) instead of
the category's paragraph.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from tpu_runtime.tpu_tiling import tile_for, tile_padded

__all__ = [
    "NAMED_FIX_EXTRACTORS",
    "alignment_facts",
    "check_owner_facts",
    "device_count_facts",
    "padded_layout_facts",
    "padded_shape",
    "tpu_chip_facts",
]

MAX_LINES = 4000

# ------------------------------------------------------------------------------ padded kernel layouts

# vector<1x128xi32>, vector<8x128xbf16>, vector<4xf32>: the shape and the element type of a Mosaic value
_VECTOR = re.compile(r"vector<(?P<dims>(?:\d+x)+)(?P<dtype>[a-z]+\d*(?:E\d+M\d+\w*)?)>")
_BITS = re.compile(r"(?:i|f|bf|ui|si)(?P<bits>\d+)|f(?P<fbits>\d+)E\d+M\d+\w*")


def _element_bits(dtype: str) -> int | None:
    m = _BITS.fullmatch(dtype)
    if m is None:
        return None
    return int(m["bits"] or m["fbits"])


def padded_shape(dims: Sequence[int], bits: int) -> tuple[tuple[int, ...], tuple[int, int]] | None:
    """The shape padded to whole TPU vector tiles (`tpu_runtime.tpu_tiling`), and the tile, or None when it
    already fills whole tiles."""
    if not dims or bits <= 0 or bits > 32:
        return None
    padded = tile_padded(dims, bits)
    if padded == tuple(dims):
        return None
    return padded, tile_for(bits)


def padded_layout_facts(lines: Sequence[str]) -> dict[str, str]:
    """`unaligned_vector` (`vector<1x128xi32>`), `padded_vector` (`8x128`) and `vector_tile` (`(8, 128)`):
    the first vector value of a quoted MLIR operation (the last one in the log) whose shape does not fill
    whole TPU tiles, and the shape it fills when padded."""
    for line in reversed(lines[-MAX_LINES:]):
        if not re.search(r'^\s*%\S+ = "?[a-z_]+\.[\w.]+', line):
            continue
        for m in _VECTOR.finditer(line):
            bits = _element_bits(m["dtype"])
            dims = [int(d) for d in m["dims"].rstrip("x").split("x")]
            padded = padded_shape(dims, bits) if bits is not None else None
            if padded is None:
                continue
            shape, tile = padded
            return {
                "unaligned_vector": m.group(0),
                "padded_vector": "x".join(str(d) for d in shape),
                "vector_tile": f"({tile[0]}, {tile[1]})",
            }
        return {}
    return {}


# ------------------------------------------------------------------------------------ size multiples

# "must be aligned to tiling (2), but is 1", "must be a multiple of 128, got 100", "should be divisible by 8
# (got 12)"; "100 is not a multiple of 128", "(12) is not divisible by 8"
_MUST_BE_MULTIPLE = re.compile(
    r"\b(?:must|should|has to|needs to) be (?:aligned to|a multiple of|(?:evenly )?divisible by) "
    r"(?:the )?(?:tiling |tile size |block size )?\(?(?P<n>\d+)\)?\W{0,3}\s*"
    r"(?:but (?:is|was|got|it is)|got|is|found|not) \(?(?P<m>\d+)\b"
)
_IS_NOT_MULTIPLE = re.compile(
    r"\(?(?P<m>\d+)\)? (?:is|was) not (?:a multiple of|(?:evenly )?divisible by|aligned to) "
    r"(?:the )?(?:tiling |tile size |block size )?\(?(?P<n>\d+)\b"
)
_DIMENSION = re.compile(r"\b(?:dimension|dim|axis) (?P<dim>\d+)\b")


def alignment_facts(lines: Sequence[str]) -> dict[str, int]:
    """`size_multiple`, `unaligned_size` and `aligned_size` (the size rounded up to the multiple), with
    `unaligned_dim` when the sentence names it: where an error says a size must be a multiple of another."""
    for line in reversed(lines[-MAX_LINES:]):
        if line.lstrip().startswith('File "'):
            continue
        for pattern in (_MUST_BE_MULTIPLE, _IS_NOT_MULTIPLE):
            m = pattern.search(line)
            if m is None:
                continue
            multiple, size = int(m["n"]), int(m["m"])
            if multiple < 2 or size % multiple == 0:
                continue
            out = {
                "size_multiple": multiple,
                "unaligned_size": size,
                "aligned_size": -(-size // multiple) * multiple,
            }
            dim = _DIMENSION.search(line)
            if dim is not None:
                out["unaligned_dim"] = int(dim["dim"])
            return out
    return {}


# ------------------------------------------------------------------------------------- device counts

_DEVICE = r"(?:\w+ )?(?:devices?|chips?)\b(?! (?:per|on each|in each|each)\b)"
# Only an error states a mismatch: an info line may print two counts ("8 devices with 4 devices per host").
_MISMATCH_LINE = re.compile(
    r"Error|error|must|cannot|can't|disallowed|mismatch|does not match|invalid|fail|but|only|insufficient"
)
# "lowered for 8 devices and is called in a context with 1 devices", "requires 8 devices but got 4",
# "expected 16 devices, found 8": what the program was built for, then what the machine has.
_WANT_THEN_HAVE = re.compile(
    rf"\b(?:for|requires?|required|needs?|needed|expects?|expected|asks? for|wants?|built with|"
    rf"compiled with) "
    rf"(?P<want>\d+) {_DEVICE}.{{0,80}}?\b(?:with|has|have|had|found|got|gets|only|sees?|but) "
    rf"(?P<have>\d+) {_DEVICE}"
)
# "only 4 devices are available, but 8 are required"
_HAVE_THEN_WANT = re.compile(
    rf"\b(?:only|found|got|have|has) (?P<have>\d+) {_DEVICE}.{{0,60}}?\b(?:but|while|whereas) "
    rf"(?P<want>\d+) (?:{_DEVICE} )?(?:are |were |is )?(?:required|needed|requested|expected)"
)


def device_count_facts(lines: Sequence[str]) -> dict[str, int]:
    """`mesh_devices` (what the program was built or sharded for) and `visible_devices` (what it runs with)
    where one error sentence states two different device counts, in either order."""
    for line in reversed(lines[-MAX_LINES:]):
        if line.lstrip().startswith('File "') or not _MISMATCH_LINE.search(line):
            continue
        for pattern in (_WANT_THEN_HAVE, _HAVE_THEN_WANT):
            m = pattern.search(line)
            if m is not None and m["want"] != m["have"]:
                return {"mesh_devices": int(m["want"]), "visible_devices": int(m["have"])}
    return {}


# ------------------------------------------------------------------------------------------ TPU chips

# "No ba16c7433 device found", "No TPU devices found", "could not find any TPU", "0 TPU chips detected"
_NO_CHIP = re.compile(
    r"\bNo (?!(?:cuda|gpu|rocm|nvidia|metal|xpu)\b)(?:\w+ )?(?:TPU )?devices? (?:was |were )?found\b|"
    r"\b(?:no|0|zero) TPU (?:chips?|devices?|hardware) (?:were |was )?(?:found|detected|available|visible)\b|"
    r"\b(?:could not|couldn't|unable to|failed to) (?:find|detect|locate) (?:any )?TPU (?:chips?|devices?)?|"
    r"\bNo hardware is found\b",
    re.IGNORECASE,
)
# libtpu saw a chip it does not know: "No hardware is found. Using default TPU version", "Unknown TPU type"
_UNRECOGNISED_CHIP = re.compile(
    r"Using default TPU version|"
    r"\b(?:unknown|unsupported|unrecogni[sz]ed) TPU (?:type|version|generation|chip)\b",
    re.IGNORECASE,
)
_CHIP_HELD = re.compile(r"already in use|Device or resource busy|libtpu_lockfile|in use by another process")


def tpu_chip_facts(lines: Sequence[str]) -> dict[str, str]:
    """`no_tpu_chip`: the line where the TPU runtime says it found no chip on this machine (not one held by
    another process); `tpu_chip_unrecognised`: the line where libtpu fell back to a default chip version
    or named the chip unknown (a libtpu older than the TPU generation)."""
    window = lines[-MAX_LINES:]
    if any(_CHIP_HELD.search(line) for line in window):
        return {}
    out: dict[str, str] = {}
    for line in reversed(window):
        if line.lstrip().startswith('File "'):
            continue
        if "no_tpu_chip" not in out and _NO_CHIP.search(line):
            out["no_tpu_chip"] = line.strip()[:200]
        if "tpu_chip_unrecognised" not in out and _UNRECOGNISED_CHIP.search(line):
            out["tpu_chip_unrecognised"] = line.strip()[:200]
    return out


# ------------------------------------------------------------------------------------ internal checks

# "torch_xla/csrc/aten_xla_type.cpp:161 : Check failed: ...", "xla_client/tf_logging.cc:11] Check failed"
_CHECK = re.compile(r"\bCheck failed\b|\bRET_CHECK\b")
_CHECK_OWNERS = (
    ("torch_xla", re.compile(r"torch_xla/csrc/|\bxla_client/|\btorch_xla\b")),
    ("jax", re.compile(r"\bjaxlib\b|\bjax/_src/|\bjax\b")),
)


def check_owner_facts(lines: Sequence[str]) -> dict[str, str]:
    """`check_owner` (`torch_xla`, `jax`): the framework whose own source file holds the internal check
    that failed, from the check's line or, failing that, the framework the log's frames name."""
    window = lines[-MAX_LINES:]
    check_lines = [line for line in window if _CHECK.search(line)]
    if not check_lines:
        return {}
    for searched in (check_lines, window):
        for owner, pattern in _CHECK_OWNERS:
            if any(pattern.search(line) for line in searched):
                return {"check_owner": owner}
    return {}


NAMED_FIX_EXTRACTORS: tuple[Callable[[Sequence[str]], Mapping[str, object]], ...] = (
    padded_layout_facts,
    alignment_facts,
    device_count_facts,
    tpu_chip_facts,
    check_owner_facts,
)
