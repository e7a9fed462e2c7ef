"""TorchTPU's op table: which ATen overloads have a TorchTPU kernel, read from PyTorch's dispatcher.

After `import torch_tpu`, every operator's dispatch table has a `PrivateUse1` entry that says what
runs when the op gets a TPU tensor: a TorchTPU kernel, TorchTPU's missing-op fallback, or one of
PyTorch's generic kernels (a composite that decomposes into other ops, or a structured op whose
functional form calls its `.out` overload). `AutogradPrivateUse1` entries registered by TorchTPU
are autograd-level overrides (e.g. `aten::linear` runs as one TPU op instead of decomposing).

Reading the table needs torch_tpu in the process (`generate_op_table`); everything else works from a
snapshot shipped in `tpu_runtime/data/op_tables/` or a table the user refreshed into their data dir,
and never imports torch_tpu. A table says what is *registered* in a torch_tpu release, not what was
verified on a chip.

Run `python -m tpu_runtime.onboard.op_table [--out FILE]` to print (or write) the installed table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.user_data import data_dir

OpKind = Literal[
    "tpu_kernel",
    "tpu_fallback",
    "composite_implicit",
    "composite_explicit",
    "structured_out",
    "python_kernel",
    "none",
]

# One-letter codes keep the shipped JSON small.
_KIND_CODE: dict[str, str] = {
    "tpu_kernel": "k",
    "tpu_fallback": "f",
    "composite_implicit": "i",
    "composite_explicit": "e",
    "structured_out": "s",
    "python_kernel": "p",
    "none": "n",
}
_CODE_KIND: dict[str, OpKind] = {v: k for k, v in _KIND_CODE.items()}  # type: ignore[misc]

FORMAT_VERSION = 1
TORCH_TPU_DIST = "torch_tpu"
INSTALL_HINT = "torch_tpu is not installed: pip install 'tpu-agent[tpu]'"
SNAPSHOT_DIR = Path(__file__).resolve().parents[1] / "data" / "op_tables"
GENERATE_TIMEOUT_S = 180.0
_EXIT_NOT_INSTALLED = 3  # exit status of `python -m tpu_runtime.onboard.op_table` without torch_tpu

# Variables every process that imports torch_tpu off a TPU VM needs (libtpu otherwise asks the cloud
# metadata server about the host and retries for minutes).
SAFE_CHILD_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}


class OpTableError(TpuAgentError, RuntimeError):
    """The op table could not be generated, refreshed or loaded."""


class OpEntry(BaseModel):
    """How one operator overload is dispatched for a TPU tensor."""

    kind: OpKind
    autograd_override: bool = Field(default=False, description="TorchTPU registers AutogradPrivateUse1")
    target: str | None = Field(
        default=None,
        description="structured_out: the .out overload it calls; composite_explicit: the sibling "
        "overload it most likely calls (matched by schema), when one was found",
    )


class OpTable(BaseModel):
    """The dispatcher's PrivateUse1 view of every registered operator, for one (torch_tpu, torch) pair."""

    torch_tpu_version: str
    torch_version: str
    generated_at: str = Field(description="UTC ISO time the table was read from the dispatcher")
    source: str = Field(default="", description="where this copy came from: snapshot or refreshed table")
    note: str | None = Field(
        default=None, description="e.g. that the snapshot's versions differ from installed"
    )
    ops: dict[str, OpEntry]

    def entry(self, op: str) -> OpEntry | None:
        return self.ops.get(op)

    def names(self, kind: OpKind, namespace: str | None = "aten") -> list[str]:
        prefix = f"{namespace}::" if namespace else ""
        return sorted(n for n, e in self.ops.items() if e.kind == kind and n.startswith(prefix))

    def counts(self, namespace: str | None = "aten") -> dict[str, int]:
        prefix = f"{namespace}::" if namespace else ""
        out: dict[str, int] = dict.fromkeys(_KIND_CODE, 0)
        out["autograd_override"] = 0
        for name, e in self.ops.items():
            if name.startswith(prefix):
                out[e.kind] += 1
                out["autograd_override"] += int(e.autograd_override)
        return out

    @property
    def label(self) -> str:
        return f"torch_tpu {self.torch_tpu_version} / torch {self.torch_version}"

    # --- compact JSON (the shipped form) -------------------------------------------------------------

    def to_compact(self) -> dict[str, Any]:
        """Ops grouped by kind (sorted name lists), autograd overrides and targets beside them."""
        by_kind: dict[str, list[str]] = {}
        autograd: list[str] = []
        targets: dict[str, str] = {}
        for name in sorted(self.ops):
            e = self.ops[name]
            by_kind.setdefault(_KIND_CODE[e.kind], []).append(name)
            if e.autograd_override:
                autograd.append(name)
            if e.target:
                targets[name] = e.target
        return {
            "v": FORMAT_VERSION,
            "torch_tpu": self.torch_tpu_version,
            "torch": self.torch_version,
            "at": self.generated_at,
            "kinds": {code: kind for kind, code in _KIND_CODE.items()},
            "ops": dict(sorted(by_kind.items())),
            "ag": autograd,
            "to": targets,
        }

    @classmethod
    def from_compact(cls, data: dict[str, Any], source: str = "", note: str | None = None) -> OpTable:
        if data.get("v") != FORMAT_VERSION:
            raise OpTableError(f"op table format {data.get('v')!r} is not {FORMAT_VERSION}")
        autograd = set(data.get("ag", []))
        targets: dict[str, str] = data.get("to", {})
        ops: dict[str, OpEntry] = {}
        for code, names in data["ops"].items():
            kind = _CODE_KIND[code]
            for name in names:
                ops[name] = OpEntry.model_construct(
                    kind=kind, autograd_override=name in autograd, target=targets.get(name)
                )
        return cls(
            torch_tpu_version=data["torch_tpu"],
            torch_version=data["torch"],
            generated_at=data["at"],
            source=source,
            note=note,
            ops=ops,
        )

    def dumps(self) -> str:
        return json.dumps(self.to_compact(), separators=(",", ":"), sort_keys=False) + "\n"

    def save(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(self.dumps(), encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def read(cls, path: Path, source: str = "", note: str | None = None) -> OpTable:
        """Parsed once per file version: servers look ops up many times, and a refresh changes the mtime."""
        try:
            stat = path.stat()
            key = (str(path), stat.st_mtime_ns, stat.st_size)
            table = _READ_CACHE.get(key)
            if table is None:
                table = cls.from_compact(json.loads(path.read_text(encoding="utf-8")), source="", note=None)
                _READ_CACHE.clear()  # one or two files are ever in use: keep the latest only
                _READ_CACHE[key] = table
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OpTableError(f"cannot read op table {path}: {exc}") from exc
        return table.model_copy(update={"source": source, "note": note})


_READ_CACHE: dict[tuple[str, int, int], OpTable] = {}


# --- versions and places ---------------------------------------------------------------------------


def normalise_version(version: str) -> str:
    """'2.13.0+cpu' -> '2.13.0' (local build tags do not change the dispatcher table)."""
    return version.split("+", 1)[0].strip()


def installed_version(dist: str) -> str | None:
    try:
        return normalise_version(importlib.metadata.version(dist))
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_versions() -> tuple[str | None, str | None]:
    """(torch_tpu, torch) versions from package metadata; neither package is imported."""
    return installed_version(TORCH_TPU_DIST), installed_version("torch")


def table_filename(torch_tpu_version: str, torch_version: str) -> str:
    return f"torch_tpu-{torch_tpu_version}_torch-{torch_version}.json"


_NAME_RE = re.compile(r"^torch_tpu-(?P<tpu>[^_]+)_torch-(?P<torch>.+)\.json$")


def parse_table_filename(name: str) -> tuple[str, str] | None:
    m = _NAME_RE.match(name)
    return (m["tpu"], m["torch"]) if m else None


def user_table_dir() -> Path:
    return data_dir() / "op_tables"


def _version_key(version: str) -> tuple[int | str, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.\-]", version))


def _sort_key(versions: tuple[str, str]) -> tuple[tuple[int | str, ...], tuple[int | str, ...]]:
    return (_version_key(versions[0]), _version_key(versions[1]))


def shipped_snapshots() -> list[tuple[str, str, Path]]:
    """(torch_tpu, torch, path) of every shipped snapshot, oldest first."""
    found: list[tuple[str, str, Path]] = []
    if SNAPSHOT_DIR.is_dir():
        for path in SNAPSHOT_DIR.glob("torch_tpu-*_torch-*.json"):
            versions = parse_table_filename(path.name)
            if versions:
                found.append((versions[0], versions[1], path))
    try:
        found.sort(key=lambda t: _sort_key((t[0], t[1])))
    except TypeError:  # mixed int/str parts: fall back to plain string order
        found.sort(key=lambda t: (t[0], t[1]))
    return found


# --- reading the dispatcher (needs torch_tpu in this process) --------------------------------------

_LINE_RE = re.compile(
    r"^(?P<key>[A-Za-z0-9]+):\s+(?P<fallthrough>fallthrough\s+)?registered\s+"
    r"(?:at\s+(?P<loc>.+?)|by\s+(?P<by>\S+))\s+\[(?P<tag>[^\]]+)\]\s*$"
)


def _split_location(loc: str) -> str:
    """'csrc/eager/tpu_aten_kernels.cc:364' -> 'csrc/eager/tpu_aten_kernels.cc'."""
    head, sep, tail = loc.rpartition(":")
    return head if sep and tail.isdigit() else loc


def _pytorch_dirs() -> tuple[str, ...]:
    """Install dirs of torch itself (python-registered kernels live there)."""
    spec = importlib.util.find_spec("torch")
    dirs: list[str] = []
    if spec and spec.submodule_search_locations:
        dirs.extend(str(Path(p).resolve()) for p in spec.submodule_search_locations)
    return tuple(dirs)


def is_pytorch_source(file: str, torch_dirs: Iterable[str] = ()) -> bool:
    """True when a registration comes from PyTorch itself, not from TorchTPU.

    PyTorch's C++ registrations carry its build paths (`/__w/pytorch/pytorch/...`, `aten/src/ATen/...`,
    `torch/csrc/...`); its Python registrations carry paths inside the installed `torch` package.
    TorchTPU's carry its own relative `csrc/...` paths or paths inside `torch_tpu`.
    """
    norm = file.replace("\\", "/")
    if "/torch_tpu/" in norm:
        return False
    if "/pytorch/" in norm or "aten/src/ATen" in norm or norm.startswith("torch/csrc/"):
        return True
    if any(norm.startswith(d.replace("\\", "/") + "/") for d in torch_dirs):
        return True
    return norm.endswith(".py") and "/torch/" in norm


def classify_line(line: str, torch_dirs: Iterable[str] = ()) -> OpKind:
    """Classify one `PrivateUse1: registered at ...` line of `torch._C._dispatch_dump_table`."""
    m = _LINE_RE.match(line.strip())
    if not m:
        return "none"
    tag = m["tag"].strip()
    by = m["by"]
    file = _split_location(m["loc"]) if m["loc"] else ""
    pytorch = True if by else is_pytorch_source(file, torch_dirs)
    if m["fallthrough"]:
        return "none"
    if tag == "backend fallback":
        return "none" if pytorch else "tpu_fallback"
    if tag == "math kernel":
        return "composite_implicit"
    if file.endswith(".py"):
        return "python_kernel" if pytorch else "tpu_kernel"
    if tag == "default backend kernel":
        if "CompositeExplicitAutogradNonFunctional" in file:
            return "structured_out"
        return "composite_explicit"
    if tag == "kernel":
        # A kernel PyTorch itself registers for PrivateUse1 (e.g. c10d ops forwarding to the process
        # group) is a generic kernel, not a TorchTPU one.
        return "composite_explicit" if pytorch else "tpu_kernel"
    return "composite_explicit" if pytorch else "tpu_kernel"


def is_autograd_override(line: str, torch_dirs: Iterable[str] = ()) -> bool:
    """An `AutogradPrivateUse1:` kernel TorchTPU registered (not PyTorch's, not a fallthrough)."""
    m = _LINE_RE.match(line.strip())
    if not m or m["fallthrough"] or m["by"] or m["tag"].strip() in ("backend fallback", "math kernel"):
        return False
    return not is_pytorch_source(_split_location(m["loc"] or ""), torch_dirs)


def dispatch_lines(table_text: str) -> tuple[str | None, str | None]:
    """The `PrivateUse1:` and `AutogradPrivateUse1:` lines of one dump (`SparsePrivateUse1:` is not one)."""
    pu1: str | None = None
    ag: str | None = None
    for line in table_text.splitlines():
        if line.startswith("PrivateUse1:"):
            pu1 = line
        elif line.startswith("AutogradPrivateUse1:"):
            ag = line
    return pu1, ag


def _arg_signature(schema: Any) -> tuple[tuple[str, str], ...]:
    """Names and types of the non-output arguments (alias annotations dropped)."""
    sig = []
    for a in schema.arguments:
        if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write:
            continue
        sig.append((a.name, str(a.type)))
    return tuple(sig)


def _is_out_schema(schema: Any) -> bool:
    return any(a.kwarg_only and a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def _full_name(schema: Any) -> str:
    return schema.name if not schema.overload_name else f"{schema.name}.{schema.overload_name}"


def _sibling_schemas(torch_mod: Any, base: str) -> list[Any]:
    try:
        return list(torch_mod._C._jit_get_schemas_for_operator(base))
    except RuntimeError:
        return []


def _resolve_targets(torch_mod: Any, kinds: dict[str, OpKind]) -> dict[str, str]:
    """Which overload a structured op's functional form calls, and a composite-explicit op's likely callee.

    A structured op's functional/in-place form (`aten::mm`, `aten::add_.Tensor`) calls the `.out`
    overload whose non-output arguments match. A composite-explicit out wrapper (`X.out`) calls the
    functional form with the same arguments; a composite-explicit functional op with an out sibling of
    matching arguments (`aten::kthvalue` -> `aten::kthvalue.values`) most often calls it.
    """
    targets: dict[str, str] = {}
    by_base: dict[str, list[Any]] = {}
    for name, kind in kinds.items():
        if kind not in ("structured_out", "composite_explicit") or not name.startswith("aten::"):
            continue
        op_base = name.split(".", 1)[0]
        fn_base = op_base[:-1] if op_base.endswith("_") and not op_base.endswith("__") else op_base
        if fn_base not in by_base:
            by_base[fn_base] = _sibling_schemas(torch_mod, fn_base)
        siblings = by_base[fn_base]
        mine = [s for s in _sibling_schemas(torch_mod, op_base) if _full_name(s) == name]
        if not mine:
            continue
        schema = mine[0]
        sig = _arg_signature(schema)
        want_out = not _is_out_schema(schema)
        matches = [
            _full_name(s)
            for s in siblings
            if _full_name(s) != name and _is_out_schema(s) == want_out and _arg_signature(s) == sig
        ]
        if not matches:
            continue
        matches.sort(key=lambda n: (not n.endswith(".out"), n))
        target = matches[0]
        if kind == "composite_explicit" and kinds.get(target) == "composite_explicit" and want_out:
            continue  # two generic wrappers calling each other tell us nothing
        targets[name] = target
    return targets


def generate_op_table() -> OpTable:
    """Read the PrivateUse1 table of every registered operator. Needs torch_tpu importable here."""
    if importlib.util.find_spec("torch_tpu") is None:
        raise OpTableError(INSTALL_HINT)
    for key, value in SAFE_CHILD_ENV.items():
        os.environ.setdefault(key, value)
    import torch
    import torch_tpu  # registers the PrivateUse1 kernels and the missing-op fallback

    torch_dirs = _pytorch_dirs()
    kinds: dict[str, OpKind] = {}
    autograd: set[str] = set()
    for name in torch._C._dispatch_get_all_op_names():
        try:
            text = torch._C._dispatch_dump_table(name)
        except RuntimeError:
            continue
        pu1, ag = dispatch_lines(text)
        kinds[name] = classify_line(pu1, torch_dirs) if pu1 else "none"
        if ag and is_autograd_override(ag, torch_dirs):
            autograd.add(name)
    targets = _resolve_targets(torch, kinds)
    tpu_version = installed_version(TORCH_TPU_DIST) or normalise_version(
        getattr(torch_tpu, "__version__", "?")
    )
    ops = {
        name: OpEntry(kind=kind, autograd_override=name in autograd, target=targets.get(name))
        for name, kind in sorted(kinds.items())
    }
    return OpTable(
        torch_tpu_version=tpu_version,
        torch_version=normalise_version(torch.__version__),
        generated_at=_dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        source=f"generated from installed torch_tpu {tpu_version}",
        ops=ops,
    )


# --- loading (never imports torch_tpu) -------------------------------------------------------------


def load_op_table(prefer_installed: bool = True) -> OpTable:
    """The best table for the installed versions, without importing torch_tpu.

    Order: a table the user refreshed for the installed (torch_tpu, torch) versions (when
    `prefer_installed`), the shipped snapshot for those versions, else the newest shipped snapshot
    with a note that its versions differ.
    """
    tpu_v, torch_v = installed_versions()
    problem: str | None = None
    if prefer_installed and tpu_v and torch_v:
        user_path = user_table_dir() / table_filename(tpu_v, torch_v)
        if user_path.is_file():
            try:
                table = OpTable.read(user_path)
            except OpTableError as exc:
                problem = f"ignored the refreshed table: {exc}"
            else:
                table.source = (
                    f"refreshed from installed torch_tpu {table.torch_tpu_version} / torch "
                    f"{table.torch_version} at {table.generated_at} ({user_path})"
                )
                return table
    snapshots = shipped_snapshots()
    if not snapshots:
        raise OpTableError(f"no op table snapshot ships in {SNAPSHOT_DIR}")
    for snap_tpu, snap_torch, path in snapshots:
        if snap_tpu == tpu_v and snap_torch == torch_v:
            source = f"snapshot torch_tpu {snap_tpu} / torch {snap_torch}"
            return OpTable.read(path, source=source, note=problem)
    same_release = [s for s in snapshots if s[0] == tpu_v]
    snap_tpu, snap_torch, path = (same_release or snapshots)[-1]
    have = f"torch_tpu {tpu_v or 'not installed'} / torch {torch_v or 'not installed'}"
    note = (
        f"the op table is the shipped snapshot for torch_tpu {snap_tpu} / torch {snap_torch}; "
        f"installed: {have}, so registrations may differ"
    )
    if tpu_v:
        note += "; refresh_op_table() reads the installed package's table"
    if problem:
        note += f"; {problem}"
    return OpTable.read(path, source=f"snapshot torch_tpu {snap_tpu} / torch {snap_torch}", note=note)


def refresh_op_table(timeout_s: float = GENERATE_TIMEOUT_S) -> Path:
    """Generate the installed table in a child process and save it in the user data dir."""
    if importlib.util.find_spec("torch_tpu") is None:
        raise OpTableError(INSTALL_HINT)
    out_dir = user_table_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(SAFE_CHILD_ENV)
    env.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)  # the child needs torch_tpu loaded
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".refresh-") as tmp:
        tmp_path = Path(tmp) / "table.json"
        cmd = [sys.executable, "-m", "tpu_runtime.onboard.op_table", "--out", str(tmp_path)]
        try:
            proc = subprocess.run(
                cmd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise OpTableError(f"generating the op table took more than {timeout_s:.0f} s") from exc
        if proc.returncode != 0 or not tmp_path.is_file():
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-5:]
            if proc.returncode == _EXIT_NOT_INSTALLED:
                raise OpTableError(INSTALL_HINT)
            raise OpTableError(
                f"generating the op table failed (exit {proc.returncode}): " + " | ".join(tail)
            )
        table = OpTable.read(tmp_path)
        dest = out_dir / table_filename(table.torch_tpu_version, table.torch_version)
        tmp_path.replace(dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tpu_runtime.onboard.op_table",
        description="Print (or write) TorchTPU's op table read from the installed torch_tpu.",
    )
    parser.add_argument("--out", type=Path, help="write the compact JSON table here instead of stdout")
    args = parser.parse_args(argv)
    start = time.monotonic()
    try:
        table = generate_op_table()
    except OpTableError as exc:
        print(str(exc), file=sys.stderr)
        return _EXIT_NOT_INSTALLED
    if args.out:
        table.save(args.out)
        counts = table.counts()
        print(
            f"wrote {args.out}: {table.label}, {len(table.ops)} ops; aten: {counts['tpu_kernel']} TorchTPU "
            f"kernels, {counts['tpu_fallback']} fallback, {counts['autograd_override']} autograd overrides "
            f"({time.monotonic() - start:.1f} s)",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(table.dumps())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
