"""typer's rich help renderer without the two rich modules it loads only for features tpu-agent leaves off.

`typer.rich_utils`, which typer imports the first time it renders help or a usage error, imports
`rich.markdown` (markdown_it, pygments) and `rich.traceback` (rich.pretty, attrs) at module level,
although it uses `Markdown` only in the "markdown" markup mode and `Traceback` only for pretty
exceptions: tpu-agent renders help in the default "rich" mode and turns pretty exceptions off. Those two
imports were about a quarter of the CPU time of `tpu-agent --help` (benchmarks/startup.py).

`install()` puts a finder on `sys.meta_path` that, while `typer.rich_utils` executes, answers those two
imports with stand-ins; each stand-in class imports the real one the first time it is called or an
attribute is read, so the help renderer behaves exactly as before. The stand-ins are removed from
`sys.modules` once `typer.rich_utils` is loaded, so any other importer gets the real modules.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

#: Module -> the one name `typer.rich_utils` imports from it.
DEFERRED = {"rich.markdown": "Markdown", "rich.traceback": "Traceback"}
HELP_RENDERER = "typer.rich_utils"


class _DeferredClass(type):
    """Metaclass of a stand-in: calling the class or reading an attribute of it loads the real class."""

    _module: str
    _name: str

    def real(cls) -> Any:
        return getattr(importlib.import_module(cls._module), cls._name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls.real(), name)


def stand_in(module: str) -> ModuleType:
    """A placeholder for `module` holding a deferred version of the name typer imports from it."""
    name = DEFERRED[module]
    placeholder = ModuleType(module, f"stand-in for {module} while {HELP_RENDERER} loads")
    setattr(placeholder, name, _DeferredClass(name, (), {"_module": module, "_name": name}))
    return placeholder


class _DeferringLoader:
    """Runs the real loader of `typer.rich_utils` with the stand-ins in place (a loader by protocol:
    subclassing `importlib.abc.Loader` would import `importlib.resources`, 10 ms here)."""

    def __init__(self, real: Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.real.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        placed = {name: stand_in(name) for name in DEFERRED if name not in sys.modules}
        sys.modules.update(placed)
        try:
            self.real.exec_module(module)
        finally:
            for name, placeholder in placed.items():
                if sys.modules.get(name) is placeholder:
                    del sys.modules[name]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


class _HelpRendererFinder:
    """Finds `typer.rich_utils` as the path finder would, then wraps its loader (once)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != HELP_RENDERER:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = cast("Loader", _DeferringLoader(spec.loader))
        return spec


_FINDER = _HelpRendererFinder()


def install() -> None:
    """Defer the two imports for the next load of `typer.rich_utils` (nothing if it is loaded already)."""
    if HELP_RENDERER not in sys.modules and _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
