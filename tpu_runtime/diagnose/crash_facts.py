"""The facts a crash log states: sizes, shapes, ops, versions, the user's source line.

Two kinds: the facts every log gets (exception, XLA status and error code, TPU generation, frameworks and
package versions seen, the innermost user frame of the last traceback), and the facts a category's rule
extracts with its own regexes (`FactSpec`, defined in crash_specs.py). `derive_facts` then adds the numbers
the fix sub-rules reason on: how far over capacity, how padded the largest allocation is, which tasks
never arrived. Sizes are bytes (`*_bytes`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tpu_runtime.diagnose.crash_dtype_facts import dtype_pair_facts
from tpu_runtime.diagnose.crash_named_fix_facts import NAMED_FIX_EXTRACTORS
from tpu_runtime.diagnose.crash_operand_facts import (
    backend_only_facts,
    backend_op_facts,
    index_range_facts,
    narrow_dtype_facts,
    size_one_stretch_facts,
    tiling_facts,
)
from tpu_runtime.diagnose.crash_release_facts import release_facts
from tpu_runtime.diagnose.crash_setting_facts import SETTING_EXTRACTORS
from tpu_runtime.diagnose.crash_versions import package_versions
from tpu_runtime.diagnose.units import parse_size

if TYPE_CHECKING:
    from tpu_runtime.diagnose.crash_specs import FactSpec

__all__ = [
    "clip",
    "derive_facts",
    "extract_facts",
    "fmt_size",
    "generic_facts",
    "render_summary",
    "render_template",
    "split_hlo_shape",
    "traceback_frames",
    "user_frame",
    "version_skew_facts",
]

MAX_LINE = 400


def clip(s: str, limit: int = MAX_LINE) -> str:
    """A line as a report quotes it: at most `limit` characters, an ellipsis where it was cut."""
    return s if len(s) <= limit else s[: limit - 1] + "…"


# -------------------------------------------------------------------------------------------- facts


def extract_facts(specs: Iterable[FactSpec], lines: Sequence[str]) -> dict[str, Any]:
    """The facts a rule's extractors find in the lines (see FactSpec for the kinds)."""
    facts: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == "records":
            records = _records(spec, lines)
            if records:
                facts[spec.name or "records"] = records
            continue
        matches = [m for m in (spec.compiled.search(line) for line in lines) if m is not None]
        if not matches:
            continue
        if spec.kind in ("first", "last"):
            # An earlier extractor's value wins: rules list the most specific regex first.
            for key, value in _groups(spec, matches[0 if spec.kind == "first" else -1]).items():
                facts.setdefault(key, value)
        elif spec.kind == "all":
            values = [_groups(spec, m) for m in matches[: spec.limit]]
            facts[spec.name or "matches"] = [v for v in values if v]
        elif spec.kind == "count":
            facts[spec.name or "count"] = len(matches)
        elif spec.kind == "count_by":
            counts = Counter(m["key"] for m in matches if m["key"])
            facts[spec.name or "counts"] = dict(counts.most_common(spec.limit))
    return facts


def _records(spec: FactSpec, lines: Sequence[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines:
        start = spec.compiled.search(line)
        if start is not None:
            if len(records) >= spec.limit:
                break
            current = _groups(spec, start)
            records.append(current)
            continue
        if current is None:
            continue
        for field in spec.compiled_fields:
            m = field.search(line)
            if m is not None:
                for key, value in _groups(spec, m).items():
                    current.setdefault(key, value)
    return records


def _groups(spec: FactSpec, m: re.Match[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in m.groupdict().items():
        if value is None or key == "key":
            continue
        value = value.strip()
        if key in spec.bytes:
            size = parse_size(value)
            if size is not None:
                out[key if key.endswith("_bytes") else f"{key}_bytes"] = size
            continue
        if key in spec.ints or key in spec.floats:
            try:
                out[key] = int(value) if key in spec.ints else float(value)
            except ValueError:
                continue
            continue
        if key.endswith("shape") and "block_size=" in value:
            value = "(" + ", ".join(_BLOCK_SIZE.findall(value)) + ")"  # Pallas' Blocked(block_size=8)
        out[key] = clip(value, 300)
        if key == "shape":
            out.update(split_hlo_shape(value))
    return out


_BLOCK_SIZE = re.compile(r"block_size=(\d+)")


_HLO_SHAPE = re.compile(r"^(?P<dtype>[a-z]+\d*(?:e\d+m\d+\w*)?)\[(?P<dims>[\d,\s]*)\]")


def split_hlo_shape(shape: str) -> dict[str, Any]:
    """`f32[32,4096,4096]{1,2,0:T(8,128)}` -> dtype 'f32', dims [32, 4096, 4096]."""
    m = _HLO_SHAPE.match(shape.strip())
    if m is None:
        return {}
    dims = [int(d) for d in m["dims"].replace(" ", "").split(",") if d]
    return {"dtype": m["dtype"], "dims": dims}


def render_summary(templates: Sequence[str], facts: dict[str, Any]) -> str:
    """The first template whose placeholders all have facts; sizes print in binary units."""
    shown = {k: _show(k, v) for k, v in facts.items() if isinstance(v, str | int | float)}
    for template in templates:
        names = re.findall(r"{(\w+)}", template)
        if all(n in shown for n in names):
            return clip(template.format(**shown), 240)
    return ""


def _show(key: str, value: str | int | float) -> str:
    if key.endswith("_bytes") and isinstance(value, int):
        return fmt_size(value)
    return str(value)


def fmt_size(n: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------------------- facts every log gets

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:,? in (?P<func>.+?))?\s*$')
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")


def traceback_frames(lines: Sequence[str]) -> tuple[tuple[str, int, str], ...]:
    """The (path, line, function) of every Python traceback frame the lines show that names its function,
    paths with '/' separators."""
    frames = []
    for line in lines:
        m = _FRAME.search(line.strip())
        if m is not None and m["func"]:
            frames.append((m["file"].replace("\\", "/"), int(m["line"]), m["func"]))
    return tuple(frames)


_STACK_FIRST = re.compile(r"\(most recent call first\):")
_FATAL = re.compile(
    r"Fatal Python error: (?P<fatal>.+)"
    r"|^\s*(?P<signal>Segmentation fault|Bus error|Aborted|Illegal instruction)(?: \(core dumped\))?\s*$"
)
_EXCEPTION = re.compile(
    r"^(?:.*?\]\s+|.*?:\s+)?(?P<type>(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|"
    r"Unsupported|Failure|Hit))(?::\s*(?P<message>.*))?$"
)
_STATUS = re.compile(
    r"\b(?P<status>RESOURCE_EXHAUSTED|INTERNAL|INVALID_ARGUMENT|FAILED_PRECONDITION|UNIMPLEMENTED|"
    r"DEADLINE_EXCEEDED|UNAVAILABLE|ABORTED|NOT_FOUND|UNKNOWN|PERMISSION_DENIED|CANCELLED|OUT_OF_RANGE|"
    r"DATA_LOSS|ALREADY_EXISTS):"
)
_ERROR_CODE = re.compile(r"\b(?P<code>E\d{4}): (?P<name>[A-Z]\w+)")
# a runtime naming the worker (host, pod) whose failure it reports, and the slice failure kind
_FAILED_WORKER = re.compile(
    r"(?:error|failure|failed|fault)s? (?:from|on|reported by|detected on) (?:worker|host|node) "
    r"(?P<worker>[\w.\-]+(?::\d+)?)",
    re.IGNORECASE,
)
_SLICE_FAILURE = re.compile(r"\b(?P<kind>SLICE_FAILURE_[A-Z_]+)\b")
_XLA_SOURCE = re.compile(r'source_file="(?P<file>[^"]+)" source_line=(?P<line>\d+)')
_MLIR_LOC = re.compile(r'\("(?P<file>[^"]+\.py)":(?P<line>\d+):\d+\)')
_GENERATION = re.compile(
    r"\b(?:TPU ?v\d[a-z]*(?: ?lite)?|TPU7x|tpu7x|v\d(?:e|p|litepod)(?:-\d+)?|v\d-\d+|Trillium|Ironwood|"
    r"tpu-v\d[a-z]*(?:-lite)?-(?:podslice|slice))\b",
    re.I,
)
_FRAMEWORKS = (
    ("torch_tpu", re.compile(r"torch_tpu|TorchTPU|torch\.tpu")),
    (
        "torch_xla",
        re.compile(
            r"torch_xla|PJRT_DEVICE|XLA_USE_BF16|pt-xla-profiler|xla_client|XRT\w+|xla::\w+"
            r"|Bad StatusOr access"
        ),
    ),
    ("vllm", re.compile(r"\bvllm\b|VllmWorker|EngineCore|tpu_inference|tpu-inference", re.I)),
    ("jax", re.compile(r"\bjax(?:lib)?\b|XlaRuntimeError|JaxRuntimeError|pallas|jax_worker")),
    (
        "tensorflow",
        re.compile(
            r"\btensorflow\b(?!/(?:compiler|tsl|core/(?:tpu|distributed_runtime|platform)))|\btf\.\w|TPUStrategy|TPUEstimator|tpu_estimator|InvalidArgumentError|NotFoundError"
        ),
    ),
    ("torch", re.compile(r"\btorch\b")),
)
_NOT_USER = ("site-packages", "dist-packages", "/lib/python3", "<frozen", "/usr/lib/python")


def user_frame(path: str) -> bool:
    """A traceback frame in the user's code: not in an installed package or the standard library."""
    return not any(marker in path for marker in _NOT_USER)


def generic_facts(lines: Sequence[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    facts.update(_source_facts(lines))
    for line in reversed(lines):
        m = _EXCEPTION.match(line.strip())
        if m is not None and not line.lstrip().startswith("File "):
            facts["exception"] = m["type"]
            if m["message"]:
                facts["message"] = clip(m["message"].strip(), 300)
            break
    for pattern, key in ((_STATUS, "status"), (_ERROR_CODE, "xla_error_code")):
        for line in reversed(lines):
            m = pattern.search(line)
            if m is not None:
                facts[key] = m[1] if key == "status" else f"{m['code']} {m['name']}"
                break
    for line in lines:
        m = _FATAL.search(line)
        if m is not None:
            facts["fatal_error"] = (m["fatal"] or m["signal"]).strip()
            break
    for pattern, key, group in (
        (_FAILED_WORKER, "failed_worker", "worker"),
        (_SLICE_FAILURE, "slice_failure", "kind"),
    ):
        for line in lines:
            m = pattern.search(line)
            if m is not None:
                facts[key] = m[group]
                break
    generation = _generation(lines)
    if generation:
        facts["tpu_generation"] = generation
    frameworks = [name for name, pattern in _FRAMEWORKS if any(pattern.search(line) for line in lines)]
    if frameworks:
        facts["frameworks"] = frameworks
        facts["framework"] = frameworks[0]  # the most specific one seen (torch_xla before plain torch)
    versions = package_versions(lines)
    if versions:
        facts["versions"] = versions
    facts.update(raising_package_facts(lines, facts.get("exception")))
    return facts


# The runtime and the frameworks on top of it (a check of theirs is the TPU stack's own, not a library's),
# and the transport libraries (a network or storage error surfaces in them whatever its cause).
_CORE_PACKAGES = frozenset(
    [
        "jax",
        "jaxlib",
        "libtpu",
        "torch",
        "torch_xla",
        "torch_tpu",
        "tensorflow",
        "tensorflow_tpu",
        "numpy",
        "builtins",
        "ray",
        "google",
        "absl",
        "concurrent",
        "multiprocessing",
        "asyncio",
        "threading",
        "importlib",
        "urllib3",
        "requests",
        "grpc",
        "httpx",
        "aiohttp",
        "fsspec",
        "gcsfs",
        "botocore",
        "certifi",
        "ssl",
        "socket",
        "http",
    ]
)
_INSTALLED_MODULE = re.compile(r"(?:site|dist)-packages/(?P<pkg>[A-Za-z_]\w*)/")


def raising_package_facts(lines: Sequence[str], exception: object = None) -> dict[str, str]:
    """`raising_package` and `raising_dist` (its pip name): the library above the TPU stack whose own check
    raised, read from the exception's module (`pytorch_lightning.utilities.exceptions.X`) or else the
    innermost installed frame of the last traceback. Such a check (a wrapper's device probe, a library's
    validation) changes between the library's releases, so the library's release is the first suspect."""
    package = None
    if isinstance(exception, str) and "." in exception:
        package = exception.split(".", 1)[0]
    else:
        for line in reversed(lines):
            if _TRACEBACK.search(line):
                break
            m = _FRAME.search(line.strip())
            if m is not None:
                found = _INSTALLED_MODULE.search(m["file"])
                if found is not None:
                    package = found["pkg"]
                break
    if package is None or package in _CORE_PACKAGES or package.startswith("_"):
        return {}
    return {"raising_package": package, "raising_dist": package.replace("_", "-")}


# Packages released in lockstep: (first, second, how much of the version must agree). jax and jaxlib
# share major.minor and jaxlib may trail jax by one patch release (jax names its minimum jaxlib); torch
# and torch_xla, tensorflow and tensorflow-tpu share major.minor.
_LOCKSTEP = (("jax", "jaxlib", 3), ("torch", "torch_xla", 2), ("tensorflow", "tensorflow_tpu", 2))
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _release(version: str) -> tuple[int, int, int]:
    m = _RELEASE.match(version)
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m is not None else (0, 0, 0)


def version_skew_facts(lines: Sequence[str]) -> dict[str, Any]:
    """Two lockstep packages of different releases in the log's own version prints (`jax 0.4.26` beside
    `jaxlib 0.4.30`, `torch 2.1.0` beside `torch_xla 2.3.0`): the pair, and the command that aligns the
    second to the first's release, so a fix can name both versions and the package to move."""
    versions = package_versions(lines)
    for first, second, depth in _LOCKSTEP:
        a, b = versions.get(first), versions.get(second)
        if a is None or b is None:
            continue
        ra, rb = _release(a), _release(b)
        patch_apart = depth == 3 and (rb[2] > ra[2] or ra[2] - rb[2] > 1)
        if ra[:2] == rb[:2] and not patch_apart:
            continue
        if first == "jax":
            command = f'pip install -U "jax[tpu]=={a}" (jaxlib and libtpu of that release)'
        elif first == "torch":
            command = (
                f'pip install "torch=={rb[0]}.{rb[1]}.*" "torch_xla[tpu]=={b}" (or torch_xla of torch {a})'
            )
        else:
            command = f"pip install tensorflow-tpu=={a} (the tensorflow release installed)"
        quoted = [
            next((ln.strip() for ln in lines if v in ln and pkg in ln.lower().replace("-", "_")), "")
            for pkg, v in ((first, a), (second, b))
        ]
        return {
            "version_skew": f"{first} {a} with {second} {b}",
            "skew_command": command,
            "version_skew_lines": list(dict.fromkeys(q for q in quoted if q)),
        }
    return {}


def _source_facts(lines: Sequence[str]) -> dict[str, Any]:
    """The innermost user frame of the last traceback that has one; else XLA/MLIR source metadata.

    Python tracebacks list the innermost frame last; faulthandler dumps ("most recent call first") list
    it first.
    """
    blocks: list[tuple[bool, list[tuple[int, re.Match[str]]]]] = [(False, [])]
    for i, line in enumerate(lines):
        if _TRACEBACK.search(line):
            blocks.append((False, []))
            continue
        if _STACK_FIRST.search(line):
            blocks.append((True, []))
            continue
        m = _FRAME.search(line)
        if m is not None:
            blocks[-1][1].append((i, m))
    facts: dict[str, Any] = {}
    last_frame = max((frames[-1][0] for _, frames in blocks if frames), default=None)
    if last_frame is not None and not _has_exception_after(lines, last_frame):
        facts["log_cut_short"] = True
    for innermost_first, frames in reversed(blocks):
        users = [(i, m) for i, m in frames if user_frame(m["file"])]
        if not users:
            continue
        i, m = users[0] if innermost_first else users[-1]
        facts.update(source_file=m["file"], source_line=int(m["line"]))
        if m["func"]:
            facts["source_function"] = m["func"].strip()
        code = _code_after(lines, i, m.start())
        if code:
            facts["source_code"] = code
        return facts
    for pattern in (_XLA_SOURCE, _MLIR_LOC):
        for line in lines:
            for found in pattern.finditer(line):
                if user_frame(found["file"]):
                    facts.update(source_file=found["file"], source_line=int(found["line"]))
                    return facts
    return facts


def _has_exception_after(lines: Sequence[str], index: int) -> bool:
    for line in lines[index + 1 : index + 40]:
        stripped = line.strip()
        if _FRAME.search(stripped):
            return True  # another frame follows (a chained traceback): not the end
        if _EXCEPTION.match(stripped) or _STATUS.search(stripped):
            return True
    return False


def _code_after(lines: Sequence[str], index: int, column: int) -> str:
    """The source line Python prints under a frame, with the log prefix of the frame line removed."""
    if index + 1 >= len(lines):
        return ""
    prefix = lines[index][:column].rstrip()
    nxt = lines[index + 1]
    if prefix and nxt.startswith(prefix):
        nxt = nxt[len(prefix) :]
    code = nxt.strip()
    if not code or _FRAME.search(code) or set(code) <= set("^~ "):
        return ""
    return clip(code, 200)


def _generation(lines: Sequence[str]) -> str | None:
    from tpu_runtime.chips import UnknownChipError, get_chip

    for line in lines:
        for m in _GENERATION.finditer(line):
            try:
                return get_chip(m.group(0)).name
            except UnknownChipError:
                continue
    return None


# ------------------------------------------------------------------------------------- derived facts

_TASK = re.compile(r"(/job:[\w-]+/replica:\d+/task:\d+)")


_RNG_BITS_LABEL = re.compile(r"^\S+ = rng-bit-generator\(")


def _rng_bits_facts(records: Sequence[Any]) -> dict[str, Any]:
    """The largest allocations that are the output of XLA's `rng-bit-generator` op.

    Random bits are drawn for a whole tensor at once (a dropout mask, a random init); when they are
    among the largest buffers, the random op's size, not the model's, is what to cut.
    """
    rng = [
        r
        for r in records
        if isinstance(r, dict) and r.get("shape") and _RNG_BITS_LABEL.search(str(r.get("xla_label", "")))
    ]
    if not rng:
        return {}
    out: dict[str, Any] = {"rng_bits_shape": rng[0]["shape"], "rng_bits_count": len(rng)}
    if isinstance(rng[0].get("size_bytes"), int):
        out["rng_bits_size_bytes"] = rng[0]["size_bytes"]
    return out


def derive_facts(facts: dict[str, Any], lines: Sequence[str]) -> dict[str, Any]:
    """Numbers the fix sub-rules reason on, computed from the extracted facts (never from guesses).

    `top_*`: the largest allocation of an OOM report (size, unpadded size, shape, op, source) and
    `top_padding_ratio` (size over unpadded size: how much tile padding costs); `rng_bits_*`: the
    largest allocations that are random bits (see _rng_bits_facts); `over_ratio`: needed over
    available; `missing_tasks`: the tasks a barrier or heartbeat named as absent.
    """
    out: dict[str, Any] = {}
    records = facts.get("largest_allocations")
    if isinstance(records, list) and records and isinstance(records[0], dict):
        # XLA lists the program's code ("overlays", no shape) among the allocations: the largest
        # tensor is the first entry with a shape.
        shaped = [r for r in records if isinstance(r, dict) and r.get("shape")]
        top = shaped[0] if shaped else records[0]
        out.update(_rng_bits_facts(records))
        for key in (
            "size_bytes",
            "unpadded_bytes",
            "shape",
            "op_name",
            "xla_label",
            "allocation_type",
            "dims",
        ):
            if key in top:
                out[f"top_{key}"] = top[key]
        if "source_file" in top and "source_line" in top:
            out["top_source"] = f"{top['source_file']}:{top['source_line']}"
        size, unpadded = top.get("size_bytes"), top.get("unpadded_bytes")
        if isinstance(size, int) and isinstance(unpadded, int) and unpadded > 0:
            out["top_padding_ratio"] = round(size / unpadded, 1)
        dims = top.get("dims")
        if isinstance(dims, list) and len(dims) >= 2 and all(isinstance(d, int) for d in dims):
            out["top_minor_dims"] = f"{dims[-2]}x{dims[-1]}"
            out["top_smallest_minor"] = min(dims[-2], dims[-1])
            if dims[-1] == dims[-2]:
                out["top_square_minor"] = dims[-1]
    padded, unpadded = facts.get("temp_padded_bytes"), facts.get("temp_unpadded_bytes")
    if isinstance(padded, int) and isinstance(unpadded, int) and unpadded > 0:
        out["temp_padding_ratio"] = round(padded / unpadded, 2)
    for need, have in (("used_bytes", "capacity_bytes"), ("requested_bytes", "free_bytes")):
        a, b = facts.get(need), facts.get(have)
        if isinstance(a, int) and isinstance(b, int) and b > 0:
            out.setdefault("over_ratio", round(a / b, 2))
    used, capacity = facts.get("used_bytes"), facts.get("capacity_bytes")
    if isinstance(used, int) and isinstance(capacity, int) and used > capacity:
        # A limit with a quarter of headroom over what the kernel asked for, rounded up to whole MiB.
        out["suggested_limit_bytes"] = -(-int(used * 1.25) // (1 << 20)) * (1 << 20)
    ops = facts.get("ops")
    counters = facts.get("fallback_counters")
    names: dict[str, None] = {}
    if isinstance(ops, dict):
        names.update(dict.fromkeys(ops))
    if isinstance(counters, list):
        names.update({c["op"]: None for c in counters if isinstance(c, dict) and "op" in c})
    if names:
        out["op_list"] = ", ".join(list(names)[:8])
        out["first_op"] = next(iter(names))
    if isinstance(counters, list):
        calls = [f"{c['op']} {c['calls']}x" for c in counters if isinstance(c, dict) and "calls" in c]
        if calls:
            out["fallback_calls"] = ", ".join(calls[:6])
    samples = facts.get("compile_samples")
    if isinstance(samples, list) and samples:
        values = [s["samples"] for s in samples if isinstance(s, dict) and isinstance(s.get("samples"), int)]
        if values:
            out["compile_samples_max"] = max(values)
            out["compile_reports"] = len(values)
    for name, value in facts.items():
        # counter records (`Counter: X` then `Value: N`): the largest value, e.g. host reads per report
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            counts = [v["value"] for v in value if isinstance(v.get("value"), int)]
            if counts:
                out[f"{name}_max"] = max(counts)
    requested, free = facts.get("requested_bytes"), facts.get("free_bytes")
    reservable = facts.get("reservable_bytes")
    sizes = (requested, free, reservable)
    if all(isinstance(v, int) for v in sizes) and int(reservable or 0) < int(requested or 0) <= int(
        free or 0
    ):
        out["fragmented"] = True  # enough free HBM in total, not in one piece
    out.update(_compile_facts(facts))
    tasks: dict[str, None] = {}
    for line in lines:
        if "task:" in line and (
            "imed out" in line or "heartbeat" in line or line.strip().startswith("/job:")
        ):
            for task in _TASK.findall(line):
                tasks.setdefault(task, None)
    if tasks and "missing_tasks" not in facts:
        out["missing_tasks"] = ", ".join(list(tasks)[:8])
    extractors: tuple[Callable[[Sequence[str]], Mapping[str, Any]], ...] = (
        narrow_dtype_facts,
        dtype_pair_facts,
        tiling_facts,
        index_range_facts,
        size_one_stretch_facts,
        backend_op_facts,
        backend_only_facts,
        version_skew_facts,
        release_facts,
        *NAMED_FIX_EXTRACTORS,  # before the settings: a mesh line those read wins over a generic count
        *SETTING_EXTRACTORS,
    )
    for found in (extract(lines) for extract in extractors):
        out.update({k: v for k, v in found.items() if k not in facts})
    return out


def _compile_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """The function compiled most often (`top_function`, `top_function_compiles`) and, from JAX's
    compile log lines, the input shapes that changed between its compiles (`changing_shapes`)."""
    out: dict[str, Any] = {}
    by_function = facts.get("compiles_by_function")
    if not isinstance(by_function, dict) or not by_function:
        return out
    name, count = max(by_function.items(), key=lambda kv: kv[1])
    out["top_function"], out["top_function_compiles"] = name, count
    calls = facts.get("compile_calls")
    if isinstance(calls, list):
        shapes: dict[str, None] = {}
        for call in calls:
            if isinstance(call, dict) and call.get("function") == name and call.get("shapes"):
                shapes.setdefault(str(call["shapes"]), None)
        if len(shapes) > 1:
            out["changing_shapes"] = _changing_arguments(list(shapes))
        own = [c for c in calls if isinstance(c, dict) and c.get("function") == name]
        shardings = _changing_shardings(own)
        if shardings:
            out["changing_shardings"] = shardings
    return out


_SPEC = re.compile(r"\bspec=(P\([^()]*\))")


def _changing_shardings(calls: list[dict[str, Any]]) -> str:
    """The partition specs of one function compiled again for the same input shapes with another argument
    mapping (JAX's compile log): the inputs arrived with a new sharding, so the shapes alone were no cause."""
    by_shapes: dict[str, dict[str, None]] = {}
    for call in calls:
        if call.get("shapes") and call.get("mapping"):
            by_shapes.setdefault(str(call["shapes"]), {}).setdefault(str(call["mapping"]), None)
    for mappings in by_shapes.values():
        if len(mappings) > 1:
            specs = [", ".join(_SPEC.findall(m)) or m[:120] for m in mappings]
            return " then ".join(dict.fromkeys(specs))
    return ""


_AVAL = re.compile(r"ShapedArray\(([^()]*(?:\([^()]*\))?[^()]*)\)|([^,\s][^,]*)")


def _changing_arguments(signatures: list[str]) -> str:
    """Only the arguments that differ between compiles: 'argument 2: int32[16,117], int32[16,131]'."""
    parsed = [[a or b for a, b in _AVAL.findall(sig)] for sig in signatures]
    width = max(len(p) for p in parsed)
    parts: list[str] = []
    for index in range(width):
        seen: dict[str, None] = {}
        for args in parsed:
            seen.setdefault(args[index] if index < len(args) else "(absent)", None)
        if len(seen) > 1:
            values = list(seen)
            parts.append(
                f"argument {index + 1}: "
                + ", ".join(values[:5])
                + (f" (+{len(values) - 5} more)" if len(values) > 5 else "")
            )
    return "; ".join(parts[:3]) or " | ".join(signatures[:3])


_PLACEHOLDER = re.compile(r"{(\w+)}")


_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.S)


def render_template(template: str, facts: dict[str, Any]) -> str | None:
    """The template with its `{fact}` placeholders filled in; None when a fact it names is missing.

    A segment in `[[...]]` is optional: it is kept (filled in) when every fact it names is present and
    dropped otherwise, so one sub-rule can quote evidence that only some logs of its cause print.
    """
    template = _OPTIONAL.sub(lambda m: render_template(m.group(1), facts) or "", template)
    values: dict[str, str] = {}
    for name in _PLACEHOLDER.findall(template):
        value = facts.get(name)
        if value is None or value == "" or value == [] or value == {}:
            return None
        values[name] = _format(name, value)
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _format(name: str, value: Any) -> str:
    if name.endswith("_bytes") and isinstance(value, int):
        return fmt_size(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)
