"""XLA dump folders (`XLA_FLAGS=--xla_dump_to=DIR`): what was compiled, how often, and where memory goes.

XLA writes one set of files per compiled module: `module_<id>.<name>.before_optimizations.txt`,
`module_<id>.<name>.<platform>_after_optimizations.txt` and, beside it, `...-buffer-assignment.txt`.
From them this reports the modules and recompilations (the same module name compiled again with a
different program: a new fingerprint in the file name, or different HLO text), fusion counts, the
largest logical buffers of the buffer assignment, and the collectives (all-reduce, all-gather,
reduce-scatter, collective-permute, all-to-all) with the user source line from the HLO metadata. Files
are read line by line, so a dump of large modules does not need its size in memory.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tpu_runtime.diagnose.crashlog import user_frame
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.report import (
    BufferStat,
    Citation,
    CollectiveStat,
    Finding,
    Recompilation,
    XlaDumpSummary,
    XlaModule,
)
from tpu_runtime.progress import ProgressFn

__all__ = ["analyze_xla_dump"]


MAX_MODULES = 200
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
_FILE = re.compile(r"^module_(?P<id>\d+)\.(?P<rest>.+)$")
_STAGE = re.compile(
    r"^(?P<name>.+?)\.(?:(?P<platform>[\w.]+?)_)?(?P<stage>before_optimizations|after_optimizations)"
    r"(?P<extra>-buffer-assignment|-memory-usage-report|-[\w\-]+)?\.txt$"
)
_HEX_TOKEN = re.compile(r"(?:^|[._-])(?:fp_|fingerprint_|0x)?(?P<hex>[0-9a-f]{12,64})(?=$|[._-])")
_HEADER = re.compile(r"^HloModule (?P<name>[^\s,]+)")
_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[^\s=%]+) = (?P<shape>\(.*?\)|\S+) (?P<op>[a-z][a-z0-9\-]*)\("
)
_FUSION_KIND = re.compile(r"\bkind=(?P<kind>k\w+)")
_OP_NAME = re.compile(r'op_name="(?P<op_name>[^"]*)"')
_SOURCE = re.compile(r'source_file="(?P<file>[^"]+)" source_line=(?P<line>\d+)')
_FRAME_ID = re.compile(r"stack_frame_id=(?P<id>\d+)")
_METADATA = re.compile(r",? metadata=\{[^{}]*\}|,? stack_frame_id=\d+|, backend_config=.*$")
_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_ROW = re.compile(r"^(?P<id>\d+) (?P<body>.+)$")
_ALLOCATION = re.compile(r"^allocation (?P<index>\d+): size (?P<size>\d+)(?P<rest>.*):\s*$")
_VALUE = re.compile(
    r"^\s*value: <\d+ (?P<name>\S+?) @\d+> \(size=(?P<size>\d+),offset=\d+\): (?P<shape>.+?)\s*$"
)

RECOMPILE_DOCS = Citation(
    label="PyTorch: dealing with recompilations",
    url="https://docs.pytorch.org/docs/stable/compile/programming_model.recompilation.html",
)
JAX_CACHE_DOCS = Citation(
    label="JAX: jit, static arguments and when it retraces",
    url="https://docs.jax.dev/en/latest/jit-compilation.html",
)
HBM_DOCS = Citation(
    label="XLA error E1000: reducing HBM use",
    url="https://openxla.org/xla/errors/error_1000",
)


@dataclass
class _ModuleFiles:
    id: str
    name: str
    text: dict[str, Path] = field(default_factory=dict)  # stage -> file (before/after optimizations)
    buffers: Path | None = None
    other: list[Path] = field(default_factory=list)
    name_hash: str | None = None


@dataclass
class _Parsed:
    signature: str = ""
    instructions: int = 0
    fusions: int = 0
    fusion_kinds: Counter[str] = field(default_factory=Counter)
    collectives: list[CollectiveStat] = field(default_factory=list)


def analyze_xla_dump(
    files: Iterable[Path], source: str, top: int = 15, progress: ProgressFn | None = None
) -> XlaDumpSummary:
    """Summarise the dump files of one folder (or one HLO text file)."""
    modules = _group(files)
    if not modules:
        raise BadInputError(source, "no XLA module files (module_<id>.<name>.*.txt) or HLO text found")
    parsed: list[tuple[_ModuleFiles, XlaModule]] = []
    all_collectives: list[CollectiveStat] = []
    biggest: list[tuple[int, int, BufferStat]] = []
    fusion_kinds: Counter[str] = Counter()
    for k, mod in enumerate(modules):
        if progress:
            progress("xla_dump", f"module {mod.id} {mod.name}", k / len(modules))
        info, assigned = _read_module(mod, source, biggest, top)
        fusion_kinds.update(info.fusion_kinds)
        all_collectives.extend(info.collectives)
        fingerprint = mod.name_hash or _fingerprint(mod)
        files_used = sorted(p.name for p in [*mod.text.values(), *([mod.buffers] if mod.buffers else [])])
        parsed.append(
            (
                mod,
                XlaModule(
                    id=mod.id,
                    name=mod.name,
                    signature=info.signature,
                    fingerprint=fingerprint,
                    instructions=info.instructions,
                    fusions=info.fusions,
                    fusion_kinds=dict(info.fusion_kinds),
                    collectives=len(info.collectives),
                    assigned_bytes=assigned,
                    files=files_used,
                ),
            )
        )
    recompilations = _recompilations([m for _, m in parsed])
    collective_counts: Counter[str] = Counter(str(c.kind) for c in all_collectives)
    largest = [b for _, _, b in sorted(biggest, key=lambda t: (-t[0], t[1]))][:top]
    module_list = [m for _, m in parsed]
    summary = XlaDumpSummary(
        source=source,
        module_count=len(module_list),
        distinct_names=len({_group_name(m.name) for m in module_list}),
        modules=module_list[:MAX_MODULES],
        modules_truncated=max(len(module_list) - MAX_MODULES, 0),
        recompilations=recompilations,
        fusion_total=sum(m.fusions for m in module_list),
        fusion_kinds=dict(fusion_kinds.most_common()),
        largest_buffers=largest,
        collective_counts={k: collective_counts[k] for k in COLLECTIVES if collective_counts[k]},
        collectives=all_collectives[: max(top, 0)],
        findings=[],
        notes=[]
        if any(m.text for m, _ in parsed)
        else ["no HLO text files: only buffer assignments were read"],
    )
    summary.findings = _findings(summary)
    return summary


# ---------------------------------------------------------------------------------------------- files


def _group(files: Iterable[Path]) -> list[_ModuleFiles]:
    modules: dict[str, _ModuleFiles] = {}
    for path in files:
        m = _FILE.match(path.name)
        if m is None:
            if path.suffix == ".txt" and _is_hlo_text(path):  # a lone HLO text file
                lone = modules.setdefault(path.name, _ModuleFiles(id="-", name=_module_name(path)))
                lone.text["after_optimizations"] = path
            continue
        stage = _STAGE.match(m["rest"])
        if stage is None:
            continue
        mod = modules.get(m["id"])
        if mod is None:
            name = stage["name"]
            hex_match = _HEX_TOKEN.search(name)
            mod = modules[m["id"]] = _ModuleFiles(
                id=m["id"], name=name, name_hash=hex_match["hex"][:16] if hex_match else None
            )
        extra = stage["extra"] or ""
        if extra == "-buffer-assignment":
            mod.buffers = path
        elif not extra:
            mod.text[stage["stage"]] = path
        else:
            mod.other.append(path)
    return sorted(modules.values(), key=lambda mod: (mod.id, mod.name))


def _is_hlo_text(path: Path) -> bool:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        return any(_HEADER.match(line) for line in (fh.readline() for _ in range(5)))


def _module_name(path: Path) -> str:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            m = _HEADER.match(line)
            if m:
                return m["name"]
    return path.stem


def _lines(path: Path) -> Iterator[str]:
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        yield from fh


# -------------------------------------------------------------------------------------------- modules


def _read_module(
    mod: _ModuleFiles, source: str, biggest: list[tuple[int, int, BufferStat]], top: int
) -> tuple[_Parsed, int | None]:
    text = mod.text.get("after_optimizations") or mod.text.get("before_optimizations")
    info = _parse_hlo(text, mod) if text is not None else _Parsed()
    assigned = _read_buffers(mod, biggest, top) if mod.buffers is not None else None
    return info, assigned


def _parse_hlo(path: Path, mod: _ModuleFiles) -> _Parsed:
    info = _Parsed()
    tables: dict[str, dict[int, str]] = {t: {} for t in _TABLES}
    table: str | None = None
    pending: list[tuple[str, str, str, str, str | None, str | None]] = []
    for line in _lines(path):
        if line.startswith("HloModule "):
            info.signature = _braced_after(line, "entry_computation_layout=")
            continue
        stripped = line.strip()
        if stripped in _TABLES:
            table = stripped
            continue
        if table is not None:
            row = _TABLE_ROW.match(stripped)
            if row is not None:
                tables[table][int(row["id"])] = row["body"]
                continue
            if not stripped:
                continue
            table = None
        m = _INSTRUCTION.match(line)
        if m is None:
            continue
        info.instructions += 1
        op = m["op"]
        if op == "fusion":
            info.fusions += 1
            kind = _FUSION_KIND.search(line)
            info.fusion_kinds[kind["kind"] if kind else "unknown"] += 1
            continue
        base = op.removesuffix("-start")
        if base in COLLECTIVES and not op.endswith("-done"):
            op_match = _OP_NAME.search(line)
            src = _SOURCE.search(line)
            frame = _FRAME_ID.search(line)
            pending.append(
                (
                    base,
                    m["name"],
                    m["shape"],
                    _braced_after(line, "replica_groups=") or _braced_after(line, "source_target_pairs="),
                    op_match["op_name"] if op_match else None,
                    f"{src['file']}:{src['line']}" if src else (frame["id"] if frame else None),
                )
            )
    frames = _StackFrames(tables)
    for collective, name, shape, groups, op_name, where in pending:
        source = where if where is None or ":" in where else frames.source(int(where))
        info.collectives.append(
            CollectiveStat(
                module=f"{mod.id} {mod.name}",
                kind=collective,  # type: ignore[arg-type]  # one of COLLECTIVES, checked above
                name=name,
                shape=shape,
                replica_groups=groups,
                op_name=op_name or "",
                source=source,
            )
        )
    return info


class _StackFrames:
    """The FileNames/FunctionNames/FileLocations/StackFrames tables of an HLO dump, resolved to file:line."""

    _FIELD = re.compile(r"(\w+)=(\d+)")

    def __init__(self, tables: dict[str, dict[int, str]]) -> None:
        self.files = {k: v.strip('"') for k, v in tables["FileNames"].items()}
        self.functions = {k: v.strip('"') for k, v in tables["FunctionNames"].items()}
        self.locations = {k: dict(self._ints(v)) for k, v in tables["FileLocations"].items()}
        self.frames = {k: dict(self._ints(v)) for k, v in tables["StackFrames"].items()}

    def _ints(self, body: str) -> Iterator[tuple[str, int]]:
        for key, value in self._FIELD.findall(body):
            yield key, int(value)

    def source(self, frame_id: int) -> str | None:
        """The innermost frame in user code, walking to parents (the tables are 1-based; 0 ends)."""
        seen: set[int] = set()
        fallback: str | None = None
        while frame_id and frame_id not in seen and frame_id in self.frames:
            seen.add(frame_id)
            frame = self.frames[frame_id]
            loc = self.locations.get(frame.get("file_location_id", 0), {})
            path = self.files.get(loc.get("file_name_id", 0))
            if path is not None:
                func = self.functions.get(loc.get("function_name_id", 0), "")
                text = f"{path}:{loc.get('line', 0)}" + (f" ({func})" if func else "")
                if user_frame(path):
                    return text
                fallback = fallback or text
            frame_id = frame.get("parent_frame_id", 0)
        return fallback


def _braced_after(line: str, key: str) -> str:
    """The value after `key`: a balanced {...} group, else the text up to the next ', '."""
    start = line.find(key)
    if start < 0:
        return ""
    i = start + len(key)
    if i < len(line) and line[i] == "{":
        depth = 0
        for j in range(i, len(line)):
            if line[j] == "{":
                depth += 1
            elif line[j] == "}":
                depth -= 1
                if depth == 0:
                    return line[i + 1 : j] if key == "entry_computation_layout=" else line[i : j + 1]
        return line[i:].strip()
    end = line.find(", ", i)
    return line[i : end if end >= 0 else len(line)].strip()


def _read_buffers(mod: _ModuleFiles, biggest: list[tuple[int, int, BufferStat]], top: int) -> int:
    assert mod.buffers is not None
    total = 0
    allocation = -1
    kind = "temp"
    for line in _lines(mod.buffers):
        a = _ALLOCATION.match(line)
        if a is not None:
            allocation = int(a["index"])
            total += int(a["size"])
            kind = _allocation_kind(a["rest"])
            continue
        v = _VALUE.match(line)
        if v is None or allocation < 0:
            continue
        size = int(v["size"])
        stat = BufferStat(
            module=f"{mod.id} {mod.name}",
            name=v["name"],
            size_bytes=size,
            shape=v["shape"],
            allocation=allocation,
            kind=kind,
        )
        entry = (size, next(_SEQUENCE), stat)
        if len(biggest) < max(top, 1) * 4:
            heapq.heappush(biggest, entry)
        elif size > biggest[0][0]:
            heapq.heapreplace(biggest, entry)
    return total


_SEQUENCE = itertools.count()  # tie-breaker so the heap never compares two BufferStats


def _allocation_kind(rest: str) -> str:
    for key, label in (
        ("parameter", "parameter"),
        ("constant", "constant"),
        ("thread-local", "thread-local"),
        ("output", "output"),
        ("maybe-live-out", "output"),
        ("preallocated-temp", "temp"),
    ):
        if key in rest:
            return label
    return "temp"


# ------------------------------------------------------------------------------------- recompilations


def _fingerprint(mod: _ModuleFiles) -> str:
    """Hash of the HLO text without metadata, source tables and backend configs (what the program is)."""
    path = mod.text.get("before_optimizations") or mod.text.get("after_optimizations")
    if path is None:
        return ""
    digest = hashlib.sha256()
    table = False
    for line in _lines(path):
        stripped = line.strip()
        if stripped in _TABLES:
            table = True
            continue
        if table:
            if not stripped or _TABLE_ROW.match(stripped):
                continue
            table = False
        digest.update(_METADATA.sub("", line.rstrip("\n")).encode())
    return digest.hexdigest()[:16]


_NUMBER_SUFFIX = re.compile(r"\.\d+$")


def _group_name(name: str) -> str:
    """Module names that differ only by a trailing counter (SyncTensorsGraph.36) or a hash are one name."""
    name = _HEX_TOKEN.sub("", name)
    return _NUMBER_SUFFIX.sub("", name)


def _recompilations(modules: list[XlaModule]) -> list[Recompilation]:
    by_name: dict[str, list[XlaModule]] = defaultdict(list)
    for m in modules:
        by_name[_group_name(m.name)].append(m)
    found: list[Recompilation] = []
    for name, group in by_name.items():
        prints = {m.fingerprint for m in group if m.fingerprint}
        if len(prints) < 2:
            continue
        signatures: list[str] = []
        for m in group:
            if m.signature and m.signature not in signatures:
                signatures.append(m.signature)
        found.append(
            Recompilation(
                name=name, compilations=len(prints), signatures=signatures, module_ids=[m.id for m in group]
            )
        )
    found.sort(key=lambda r: r.compilations, reverse=True)
    return found


# ------------------------------------------------------------------------------------------- findings


def _findings(s: XlaDumpSummary) -> list[Finding]:
    out: list[Finding] = []
    for r in s.recompilations:
        shapes = "; ".join(r.signatures[:3]) + (" ..." if len(r.signatures) > 3 else "")
        out.append(
            Finding(
                kind="recompilation",
                severity="high" if r.compilations >= 3 else "medium",
                message=f"{r.name} was compiled {r.compilations} times with different programs "
                f"(modules {', '.join(r.module_ids[:6])}); layouts: {shapes}",
                fix="Give the function the same shapes and static arguments every call: pad or bucket "
                "variable dimensions, drop the last short batch, pass changing Python scalars as arrays.",
                citations=[JAX_CACHE_DOCS, RECOMPILE_DOCS],
            )
        )
    if s.largest_buffers:
        b = s.largest_buffers[0]
        out.append(
            Finding(
                kind="largest_buffer",
                severity="info",
                message=f"largest buffer: {b.name} {b.shape} ({b.size_bytes:,} bytes, {b.kind}) "
                f"in module {b.module}",
                fix="If memory is tight, start here: keep it in bf16, shard it, or recompute it in the "
                "backward pass instead of keeping it.",
                citations=[HBM_DOCS],
            )
        )
    if s.collective_counts:
        counts = ", ".join(f"{n} {k}" for k, n in s.collective_counts.items())
        out.append(
            Finding(
                kind="collectives",
                severity="info",
                message=f"collectives in the compiled modules: {counts}",
            )
        )
    return out
