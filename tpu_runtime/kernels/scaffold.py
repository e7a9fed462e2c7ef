"""`kernel new`: copy a template kernel module into the user's folder.

Templates live in `tpu_runtime/kernels/templates/` as complete kernel modules (they pass `kernel check`
themselves); they are read as text and never imported here, so listing them needs neither JAX nor libtpu.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from tpu_runtime.errors import BadInput

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ScaffoldError(BadInput, ValueError):
    """Bad name, unknown template or an existing file; the message is one line."""


@dataclass(frozen=True)
class Template:
    name: str
    path: Path
    summary: str


def list_templates() -> list[Template]:
    """Every template with the first line of its docstring."""
    found = []
    for path in sorted(TEMPLATES_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found.append(Template(path.stem, path, doc.strip().splitlines()[0] if doc.strip() else ""))
    return found


def template_names() -> list[str]:
    return [t.name for t in list_templates()]


def create_kernel(name: str, template: str, folder: Path, force: bool = False) -> Path:
    """Write FOLDER/NAME.py from TEMPLATE; refuses to overwrite unless `force`."""
    stem = name[:-3] if name.endswith(".py") else name
    if not _NAME.match(stem):
        raise ScaffoldError(
            f"kernel name {name!r} must be a Python identifier (letters, digits, _), e.g. my_matmul"
        )
    templates = {t.name: t for t in list_templates()}
    if template not in templates:
        raise ScaffoldError(f"unknown template {template!r}; choose one of: {', '.join(sorted(templates))}")
    target = folder / f"{stem}.py"
    if target.exists() and not force:
        raise ScaffoldError(f"{target} already exists (pass --force to overwrite it)")
    folder.mkdir(parents=True, exist_ok=True)
    source = templates[template].path.read_text(encoding="utf-8")
    header = (
        f"# Created by `tpu-agent kernel new {stem} --template {template}`. "
        f"Check it: tpu-agent kernel check {target.name}\n"
    )
    target.write_text(header + source, encoding="utf-8")
    return target
