"""Docs and docstrings of installed packages, read from disk (never imported), cited to file and line.

Which packages and files: `knowledge/indexed_packages.yaml`. Python files give one passage group per
documented module, class, function and method (signature plus docstring, `ast` only); Markdown files are
chunked as written. Where a package re-exports an internal symbol under a public name (torch_tpu's
`torch.tpu` table, `jax.experimental.pallas.tpu`), the passage carries the public name too, so typing
`torch.tpu.pallas.jax_op` or `pltpu.PrefetchScalarGridSpec` finds it. Module-level string constants that
look like environment variables or flags are listed with the module, for exact lookups.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tpu_runtime.knowledge.chunking import Block, chunk_markdown, pack, text_blocks
from tpu_runtime.knowledge.corpus import (
    ChunkRecord,
    LoadedUnit,
    UnitSpec,
    chunk_id,
    hash_bytes,
    passage_chunk,
)
from tpu_runtime.resources import knowledge_dir
from tpu_runtime.yaml_data import safe_load

PACKAGES_FILE = "indexed_packages.yaml"
_ENVLIKE_RE = re.compile(r"^(--?[a-z][a-z0-9_\-]{3,}|[A-Z][A-Z0-9]*(_[A-Z0-9]+){1,})$")


class UrlRule(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str
    url: str


class PackageConfig(BaseModel):
    """One entry of `knowledge/indexed_packages.yaml`."""

    model_config = ConfigDict(extra="forbid")

    dist: str
    module: str
    python: list[str] = []
    markdown: list[str] = []
    exclude: list[str] = []
    symbols: dict[str, list[str]] = {}
    reexports: dict[str, str] = {}
    torch_tpu_public_api: str | None = None
    urls: list[UrlRule] = []


class PackagesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    packages: list[PackageConfig]


def load_package_configs(path: Path | None = None) -> list[PackageConfig]:
    file = path or knowledge_dir() / PACKAGES_FILE
    return PackagesFile.model_validate(safe_load(file.read_text())).packages


def _site_root(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).parent
    return Path(spec.origin).parent if spec.origin else None


def _match(rel: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatch(rel, pattern) for pattern in patterns)


def _files(root: Path, patterns: list[str], exclude: list[str]) -> list[str]:
    found: set[str] = set()
    for pattern in patterns:
        for path in root.glob(pattern):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not _match(rel, exclude) and "__pycache__" not in rel:
                found.add(rel)
    return sorted(found)


@dataclass
class _Selection:
    config: PackageConfig
    root: Path
    version: str
    python: list[str] = field(default_factory=list)
    markdown: list[str] = field(default_factory=list)


def _select(config: PackageConfig) -> _Selection | None:
    root = _site_root(config.module)
    if root is None:
        return None
    try:
        version = importlib.metadata.version(config.dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    return _Selection(
        config,
        root,
        version,
        _files(root, config.python + list(config.symbols), config.exclude),
        _files(root, config.markdown, config.exclude),
    )


def discover_packages(configs: list[PackageConfig] | None = None) -> tuple[list[UnitSpec], list[str]]:
    """One unit per installed package in the list; plus a note for each listed package not installed."""
    specs: list[UnitSpec] = []
    notes: list[str] = []
    for config in configs if configs is not None else load_package_configs():
        selection = _select(config)
        if selection is None:
            notes.append(f"package {config.dist} is not installed; its docs are not indexed")
            continue
        parts = [(rel, (selection.root / rel).read_bytes()) for rel in selection.python + selection.markdown]
        parts.append(("version", selection.version.encode()))
        specs.append(
            UnitSpec(
                unit=f"package:{config.dist}",
                kind="package",
                label=f"{config.dist} {selection.version}",
                content_hash=hash_bytes(parts),
                version=selection.version,
                location=str(selection.root / config.module),
                load=functools.partial(load_package, selection),
            )
        )
    return specs, notes


def _url_for(config: PackageConfig, rel: str) -> str | None:
    for rule in config.urls:
        if rel.startswith(rule.prefix):
            return rule.url
    return None


def _module_name(rel: str) -> str:
    name = rel.removesuffix(".py").replace("/", ".")
    return name.removesuffix(".__init__")


def _public_aliases(selection: _Selection) -> dict[str, str]:
    """internal dotted name -> public dotted name, from re-export modules and torch_tpu's API table."""
    aliases: dict[str, str] = {}
    config = selection.config
    for rel, public_module in config.reexports.items():
        path = selection.root / rel
        if not path.is_file():
            continue
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for name in node.names:
                    if name.name != "*":
                        aliases[f"{node.module}.{name.name}"] = f"{public_module}.{name.asname or name.name}"
    if config.torch_tpu_public_api:
        aliases.update(_torch_tpu_table(selection.root / config.torch_tpu_public_api))
    return aliases


def _torch_tpu_table(path: Path) -> dict[str, str]:
    """Read `_PUBLIC_MODULES` of torch_tpu's public_api.py: 'pkg.mod:Qual.name' -> 'torch.tpu.x.name'."""
    if not path.is_file():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    constants: dict[str, str] = {}
    table: dict[str, str] = {}

    def value_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        if isinstance(node, ast.JoinedStr):
            parts = [
                value_of(v.value) if isinstance(v, ast.FormattedValue) else value_of(v) for v in node.values
            ]
            return None if None in parts else "".join(p for p in parts if p is not None)
        if isinstance(node, ast.Call) and node.args:
            if isinstance(node.func, ast.Name) and node.func.id == "_tpu_attr":
                inner = value_of(node.args[0])
                base = constants.get("_TPU_DEVICE_CLASS")
                return f"{base}.{inner}" if inner and base else None
            return value_of(node.args[0])  # Property("target")
        return None

    for node in tree.body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or value is None:
            continue
        if target.id == "_PUBLIC_MODULES" and isinstance(value, ast.Dict):
            for key, spec in zip(value.keys, value.values, strict=False):
                module = value_of(key) if key is not None else None
                if not module or not isinstance(spec, ast.Call):
                    continue
                for kw in spec.keywords:
                    if kw.arg == "exports" and isinstance(kw.value, ast.Dict):
                        for name_node, export in zip(kw.value.keys, kw.value.values, strict=False):
                            name = value_of(name_node) if name_node is not None else None
                            dotted = value_of(export)
                            if name and dotted:
                                table[dotted.replace(":", ".")] = f"{module}.{name}"
        else:
            text = value_of(value)
            if text is not None:
                constants[target.id] = text
    return table


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    try:
        args = ast.unparse(node.args)
    except Exception:  # ast.unparse can fail on unusual nodes; the docstring still indexes
        args = "..."
    if len(args) > 300:
        args = args[:300] + "..."
    return f"{node.name}({args})"


def _class_signature(node: ast.ClassDef) -> str:
    """'class Name(Base)' plus its constructor arguments or annotated fields."""
    try:
        bases = ", ".join(ast.unparse(b) for b in node.bases)
    except Exception:  # ast.unparse can fail on unusual nodes; the name alone still helps
        bases = ""
    text = f"class {node.name}({bases})" if bases else f"class {node.name}"
    for item in node.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return f"{text} with constructor {_signature(item)}"
    fields = [ast.unparse(item.target) for item in node.body if isinstance(item, ast.AnnAssign)]
    return f"{text} with fields {', '.join(fields)}" if fields else text


def _doc_start(node: ast.stmt) -> int:
    """Line of the docstring's first text line (cleandoc drops leading blank lines)."""
    value = getattr(node, "value", None)
    raw = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else ""
    return node.lineno + (len(raw) - len(raw.lstrip("\n")))


def _python_pieces(
    source: str, rel: str, aliases: dict[str, str], only: list[str] | None
) -> list[dict[str, Any]]:
    """Documented symbols of one file: qualified name, public name, signature, line, docstring."""
    tree = ast.parse(source)
    module = _module_name(rel)
    found: list[dict[str, Any]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            if node.name.startswith("_") and node.name != "__init__":
                continue
            if only is not None and not prefix and node.name not in only:
                continue
            qual = f"{prefix}{node.name}"
            doc = ast.get_docstring(node)
            signature = _signature(node) if not isinstance(node, ast.ClassDef) else _class_signature(node)
            dotted = f"{module}.{qual}"
            if not (doc and len(doc.split()) >= 4) and dotted in aliases:
                # a public name without a docstring still gets a passage, so typing it finds its definition
                doc = f"{aliases[dotted]} is defined in {module} as {signature} (no docstring)."
            if doc and len(doc.split()) >= 4:
                first = node.body[0]
                found.append(
                    {
                        "symbol": dotted,
                        "public": aliases.get(dotted),
                        "signature": signature,
                        "line": node.lineno,
                        "doc_line": _doc_start(first) if ast.get_docstring(node) else node.lineno,
                        "doc": doc,
                    }
                )
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{qual}.")

    module_doc = ast.get_docstring(tree)
    constants = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and _ENVLIKE_RE.match(value.value)
            ):
                constants.append(f"{node.targets[0].id} = {value.value!r} (line {node.lineno})")
    if only is None and (module_doc or constants):
        text = module_doc or ""
        if constants:
            text += ("\n\n" if text else "") + "Constants: " + "; ".join(constants)
        doc_line = _doc_start(tree.body[0]) if module_doc else 1
        found.append(
            {
                "symbol": module,
                "public": None,
                "signature": f"module {module}",
                "line": 1,
                "doc_line": doc_line,
                "doc": text,
            }
        )
    visit(tree.body, "")
    return found


def load_package(selection: _Selection) -> LoadedUnit:
    config = selection.config
    unit = f"package:{config.dist}"
    aliases = _public_aliases(selection)
    chunks: list[ChunkRecord] = []
    skipped: list[str] = []
    for rel in selection.python:
        try:
            source = (selection.root / rel).read_text(encoding="utf-8")
            only = config.symbols.get(rel)
            symbols = _python_pieces(source, rel, aliases, only)
        except (SyntaxError, UnicodeDecodeError, OSError) as exc:
            skipped.append(f"{config.dist}: {rel}: {type(exc).__name__}")
            continue
        for item in symbols:
            name = item["public"] or item["symbol"]
            header = f"{name} — {item['signature']}"
            if item["public"]:
                header += f" (defined as {item['symbol']})"
            start = item["doc_line"] - 1
            pieces = pack(Block(b.line + start, b.text, None) for b in text_blocks(item["doc"]))
            for ordinal, piece in enumerate(pieces):
                chunks.append(
                    ChunkRecord(
                        id=chunk_id(unit, rel, item["line"], ordinal, piece.text),
                        unit=unit,
                        kind="package",
                        title=f"{header} [{config.dist} {selection.version} {rel}]",
                        text=piece.text,
                        path=rel,
                        line=piece.line,
                        symbol=name,
                        package=config.dist,
                        version=selection.version,
                        url=_url_for(config, rel),
                    )
                )
    for rel in selection.markdown:
        try:
            text = (selection.root / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:
            skipped.append(f"{config.dist}: {rel}: {type(exc).__name__}")
            continue
        for ordinal, piece in enumerate(chunk_markdown(text)):
            chunks.append(
                passage_chunk(
                    unit,
                    "package",
                    rel,
                    ordinal,
                    piece,
                    package=config.dist,
                    version=selection.version,
                    url=_url_for(config, rel),
                )
            )
    return LoadedUnit(chunks, skipped)
