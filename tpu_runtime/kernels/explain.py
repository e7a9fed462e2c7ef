"""Turn interpreter, Mosaic and XLA:TPU errors into one line that says what is wrong and how to fix it.

Each `explain_*` function takes the exception (and whatever else was captured) and returns an
`Explained`: a one-line message naming the offending ref, index, block or generation and the kernel file's
line where it came from, plus the raw text as detail. Unknown errors keep their first line.
"""

from __future__ import annotations

import math
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_MEMORY_SPACES = {"smem": "SMEM", "vmem": "VMEM", "hbm": "HBM", "any": "HBM"}
_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "": 1}


@dataclass
class Explained:
    kind: str
    message: str
    detail: str = ""


def first_line(exc: BaseException | str) -> str:
    text = exc if isinstance(exc, str) else str(exc)
    for line in text.strip().splitlines():
        line = line.strip()
        if line:
            return line
    return type(exc).__name__ if isinstance(exc, BaseException) else ""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def user_frames(excs: list[BaseException], path: Path) -> list[tuple[int, str]]:
    """(line number, source line) of every traceback frame inside the kernel file, outermost first."""
    target = str(path.resolve())
    frames: list[tuple[int, str]] = []
    for exc in excs:
        for link in _chain(exc):
            for frame in traceback.extract_tb(link.__traceback__):
                if frame.filename in (target, str(path)) and frame.lineno is not None:
                    entry = (frame.lineno, (frame.line or "").strip())
                    if entry not in frames:
                        frames.append(entry)
    return frames


def _at(frames: list[tuple[int, str]], path: Path) -> str:
    if not frames:
        return ""
    line, text = frames[-1]
    return f" at {path.name}:{line}" + (f" (`{text}`)" if text else "")


_LIBRARY_PARTS = (
    f"{os.sep}site-packages{os.sep}",
    f"{os.sep}dist-packages{os.sep}",
    f"{os.sep}lib{os.sep}python",
)


def _library(filename: str) -> bool:
    """A frame of Python, JAX, this checker or any installed package (not the user's kernel code)."""
    own = str(Path(__file__).resolve().parent.parent)
    return (
        filename.startswith("<")
        or any(part in filename for part in _LIBRARY_PARTS)
        or filename.startswith(own)
    )


@dataclass
class Location:
    """Where in the user's code (the kernel file or any module it imports) an error points."""

    file: str
    line: int
    text: str

    def render(self) -> str:
        return f" at {Path(self.file).name}:{self.line}" + (f" (`{self.text}`)" if self.text else "")


def user_location(excs: list[BaseException]) -> Location | None:
    """The innermost traceback frame in user code across the exceptions and their causes.

    JAX attaches the stack of the traced operation that failed (the kernel body's line, wherever that
    function lives) as a cause of interpreter errors; that frame is deeper than the call site in the kernel
    file, so it wins.
    """
    best: tuple[int, Location] | None = None
    for exc in excs:
        for link in _chain(exc):
            frames = [f for f in traceback.extract_tb(link.__traceback__) if f.lineno is not None]
            for depth, frame in enumerate(frames):
                if _library(frame.filename):
                    continue
                rank = depth + (1000 if type(link).__name__ == "JaxStackTraceBeforeTransformation" else 0)
                if best is None or rank >= best[0]:
                    text = (frame.line or "").strip()
                    best = (rank, Location(frame.filename, int(frame.lineno or 0), text))
    return best[1] if best else None


def interpreter_failure(exc: BaseException, logged: list[BaseException]) -> BaseException | None:
    """The exception, if any, that the TPU interpreter itself raised (a limit of interpret mode, not a bug
    the kernel has): its innermost frame is in JAX's Pallas interpreter and it is not one of the checks the
    interpreter makes on purpose (out-of-bounds reads and block indices)."""
    for candidate in [*logged, exc]:
        for link in _chain(candidate):
            if "Out-of-bounds" in str(link) or "Revisited block" in str(link):
                return None
    for candidate in [*logged, exc]:
        for link in _chain(candidate):
            frames = traceback.extract_tb(link.__traceback__)
            if not frames:
                continue
            inner = frames[-1].filename.replace(os.sep, "/")
            if "/jax/_src/pallas/mosaic/interpret/" in inner and not isinstance(link, IndexError):
                return link
            if "interpret mode" in str(link).lower() and "not supported" in str(link).lower():
                return link
    return None


DescribeRef = Callable[[Location, str, str], "str | None"]


def explain_runtime(
    exc: BaseException,
    logged: list[BaseException],
    path: Path,
    describe_ref: DescribeRef | None = None,
) -> Explained:
    """An exception raised while the kernel ran in interpret mode (or while it was being traced).

    `describe_ref(location, memory space, shape)` names the kernel's own ref parameter read at a location.
    """
    text = str(exc)
    location = user_location([exc, *logged])
    where = location.render() if location else _at(user_frames([exc, *logged], path), path)
    detail = "".join(traceback.format_exception(exc))
    limit = interpreter_failure(exc, logged)
    if limit is not None:
        frames = traceback.extract_tb(limit.__traceback__)
        inner = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
        return Explained(
            "interpreter",
            f"cannot be checked in interpret mode: JAX's TPU interpreter itself failed with "
            f"{type(limit).__name__}: {first_line(limit)}{inner}; this is a limit of interpret mode, not "
            "a verdict on the kernel",
            detail,
        )
    read = re.search(
        r"Out-of-bounds read of \((\d+) (\d+) (\w+) (\d+)\): "
        r"reading \[(.*?)\] but buffer has shape (\(.*?\))",
        text + "\n" + "\n".join(str(e) for e in logged),
    )
    if read:
        space, index, shape = read.group(3), read.group(5), read.group(6)
        memory = _MEMORY_SPACES.get(space, space.upper())
        ref = f"{'an' if memory in ('SMEM', 'HBM') else 'a'} {memory} buffer of shape {shape}"
        if describe_ref is not None and location is not None:
            named = describe_ref(location, space, shape)
            if named:
                ref = named
        return Explained(
            "oob_read",
            f"out-of-bounds read of {ref} at index [{_index(index)}]{where}: the last valid index is "
            f"{_last_index(shape)}; clamp the index or size the array for every grid step",
            detail,
        )
    block = re.search(
        r'Out-of-bounds block index (\(.*?\)) for input "(.*?)" in iteration (\(.*?\))'
        r".*?but input has shape (\(.*?\))",
        text,
        re.S,
    )
    if block:
        return Explained(
            "oob_block",
            f"out-of-bounds block index {block.group(1)} for input {block.group(2)!r} "
            f"at grid step {block.group(3)} "
            f"(input shape {block.group(4)}){where}: the index map points past the end of the array",
            detail,
        )
    revisit = re.search(r"Revisited block (.*?) of output (\d+) in iteration (\(.*?\))", text)
    if revisit:
        return Explained(
            "revisited",
            f"output {revisit.group(2)} revisits block {revisit.group(1)} "
            f"at grid step {revisit.group(3)} after "
            f"leaving it{where}: its contents were already written back and will be overwritten; make each "
            "output block's visits consecutive (put the reduction axis last in the grid)",
            detail,
        )
    if (
        "Only interpret mode is supported on CPU" in text
        or "Cannot lower pallas_call on platform cpu" in text
    ):
        return Explained(
            "not_interpreted",
            "the kernel ran a Pallas kernel outside TPU interpret mode: call `pl.pallas_call` (not a cached "
            "compiled function) so the checker can interpret it",
            detail,
        )
    origin = f"{type(exc).__name__}: {first_line(exc)}"
    return Explained("raised", f"the kernel raised {origin}{where}", detail)


def _index(text: str) -> str:
    found = re.findall(r"-?\d+", text.replace("slice(", ""))
    return ", ".join(found) if found else text


def _last_index(shape: str) -> str:
    dims = [int(d) for d in re.findall(r"\d+", shape)]
    return "[" + ", ".join(str(d - 1) for d in dims) + "]" if dims else "none"


_RACE = re.compile(
    r"RACE DETECTED\s+(read|write) of \('?(\w+)'?, (\d+)[^\]]*?\[(.*?)\] "
    r"from (\d+), (\d+),? (\S+?):(\d+):\d+ .*?"
    r"(read|write) of .*? from (\d+), (\d+),? (\S+?):(\d+):\d+",
    re.S,
)


def explain_race(printed: str, path: Path) -> Explained:
    """The interpreter's race detector printed 'RACE DETECTED'; name both accesses and the usual fix."""
    match = _RACE.search(printed)
    if not match:
        return Explained("race", "the interpreter's race detector found a data race (see details)", printed)
    space = _MEMORY_SPACES.get(match.group(2), match.group(2).upper())

    def who(kind: str, device: str, file: str, line: str) -> str:
        actor = "a DMA" if int(device) >= 100 else "the kernel"
        name = Path(file).name
        return f"{kind} by {actor} at {name}:{line}"

    first = who(match.group(1), match.group(5), match.group(7), match.group(8))
    second = who(match.group(9), match.group(10), match.group(12), match.group(13))
    return Explained(
        "race",
        f"data race on a {space} buffer: {first} is not ordered with {second}; wait on the copy's semaphore "
        "(`.wait()`) before touching its destination or source",
        printed,
    )


def explain_lowering(exc: BaseException, path: Path) -> Explained:
    """An error from `jax.export(..., platforms=['tpu'])`: Pallas/Mosaic rejected the kernel."""
    text = str(exc)
    detail = "".join(traceback.format_exception(exc))
    where = _at(user_frames([exc], path), path)
    tiling = re.search(
        r"Block spec for (.+?) in pallas_call .*? has block shape \((.*?)\), array shape \((.*?)\)",
        text,
        re.S,
    )
    if "divisible by 8 and 128" in text and tiling:
        block = _block_dims(tiling.group(2))
        array = [int(d) for d in re.findall(r"\d+", tiling.group(3))]
        return Explained(
            "block_shape",
            f"illegal block shape {tuple(block)} for {tiling.group(1)} (array {tuple(array)}): "
            "on TPU the last two "
            "block dimensions must be multiples of 8 (sublanes; 16 for 16-bit, 32 for 8-bit types) and 128 "
            f"(lanes), or equal the array's dimensions{_suggest(block, array)}",
            detail,
        )
    unimplemented = re.search(r"Unimplemented primitive in Pallas TPU lowering[^:]*:\s*(\S+)", text)
    if unimplemented:
        return Explained(
            "unsupported",
            f"`{unimplemented.group(1).rstrip('.')}` has no Pallas TPU (Mosaic) lowering{where}: "
            "compute it from "
            "supported operations or move it outside the kernel",
            detail,
        )
    if (
        isinstance(exc, NotImplementedError)
        or "not implemented" in text.lower()
        or "unsupported" in text.lower()
    ):
        return Explained("unsupported", f"Mosaic cannot lower this kernel{where}: {first_line(exc)}", detail)
    return Explained(
        "lowering", f"lowering for TPU failed{where}: {type(exc).__name__}: {first_line(exc)}", detail
    )


def _block_dims(text: str) -> list[int]:
    dims = []
    for part in re.split(r",\s*(?![^()]*\))", text):
        number = re.search(r"(\d+)", part)
        dims.append(int(number.group(1)) if number else 1)
    return dims


def _suggest(block: list[int], array: list[int]) -> str:
    if len(block) < 2 or len(array) < 2:
        return ""
    fixes = []
    for pos, unit in ((-2, 8), (-1, 128)):
        size, full = block[pos], array[pos]
        if size == full or size % unit == 0:
            continue
        lower = max(unit, (size // unit) * unit)
        fixes.append(f"dimension {len(block) + pos}: use {lower} (a multiple of {unit}) or {full}")
    return "; " + "; ".join(fixes) if fixes else ""


def _bytes(number: str, unit: str) -> int:
    return int(float(number) * _UNITS.get(unit.upper()[:1] if unit else "", 1))


def explain_compile(exc: BaseException, generation: str, vmem_capacity: int | None) -> Explained:
    """An error from XLA:TPU/Mosaic compiling for one generation's compile-only device."""
    text = str(exc)
    detail = "".join(traceback.format_exception(exc))
    used = re.search(r"memory space vmem\. Used ([\d.]+)([KMG]?) of ([\d.]+)([KMG]?) vmem", text)
    if used:
        need, have = _bytes(used.group(1), used.group(2)), _bytes(used.group(3), used.group(4))
        return Explained(
            "vmem",
            f"too big for VMEM on {generation}: needs {_mib(need)} of {_mib(have)}; "
            "use smaller blocks or fewer "
            "buffers (pipeline_mode=pl.Buffered(1) for blocks that do not change)",
            detail,
        )
    alloc = re.search(
        r"Allocation \(size=(\d+)\) would exceed memory \(size=(\d+)\)(.*?space=(\w+))?", text, re.S
    )
    if alloc:
        size, limit = int(alloc.group(1)), int(alloc.group(2))
        space = (alloc.group(4) or "vmem").upper()
        return Explained(
            "vmem" if space == "VMEM" else "memory",
            f"too big for {space} on {generation}: one buffer of {_mib(size)} does not fit in {_mib(limit)}"
            + ("; shrink the block or scratch shape" if space == "VMEM" else ""),
            detail,
        )
    if "vmem_limit_bytes" in text or ("scoped" in text.lower() and "vmem" in text.lower()):
        cap = f" ({_mib(vmem_capacity)} per core)" if vmem_capacity else ""
        return Explained(
            "vmem",
            f"VMEM limit problem on {generation}{cap}: {first_line(exc)}; keep vmem_limit_bytes within the "
            "chip's VMEM",
            detail,
        )
    mosaic = re.search(r"Mosaic failed to compile TPU kernel:?\s*(.*)", text)
    reason = first_line(mosaic.group(1)) if mosaic and mosaic.group(1).strip() else first_line(exc)
    lowered = reason.lower()
    if any(word in lowered for word in ("not implemented", "unsupported", "not supported", "unimplemented")):
        return Explained(
            "unsupported",
            f"the Mosaic compiler for {generation} does not support this kernel: {reason} "
            "(operation or dtype "
            "combination missing on this generation; change the dtype or the operation)",
            detail,
        )
    return Explained("compile", f"XLA:TPU could not compile for {generation}: {reason}", detail)


def _mib(size: float | int | None) -> str:
    if size is None or (isinstance(size, float) and math.isnan(size)):
        return "?"
    return f"{size / 2**20:.1f} MiB"


def describe_value(value: Any) -> str:
    """Short text for a number in a message."""
    try:
        return f"{float(value):.6g}"
    except (TypeError, ValueError):
        return str(value)
