"""The base class of the report and playbook models: pydantic's, or a plain stand-in on one route.

`tpu-agent diagnose PROFILE` printed for the terminal (`tpu_runtime.cli.diagnose_route`) uses the
report models only as records: the analyser constructs them from fields it has typed itself
(`model_construct`), the playbook comes precompiled, and the renderer reads attributes. There, loading
pydantic (about 0.06 s of CPU, a third of xprof's whole overview page of the same profile) is the
largest cost left, so that route calls `use_plain_models()` before any model module is imported, and
the modules named in `MODEL_MODULES` then define their classes on `PlainModel`: the same fields and
defaults, constructed the same way, without validation or schemas; `plain_dump` writes them as
`model_dump(mode="json")` does (`--json`). Everything else (the typer commands, the MCP servers, the
tests) gets pydantic's classes; tests/test_model_base.py checks that both kinds hold the same fields with
the same defaults and dump the same JSON.
"""

from __future__ import annotations

import copy
import inspect
import sys
from typing import Any, ClassVar

__all__ = [
    "MODEL_MODULES",
    "PLAIN",
    "PlainModel",
    "plain_config",
    "plain_dump",
    "plain_field",
    "use_plain_models",
]

#: True once `use_plain_models()` has run in this process.
PLAIN = False
#: The modules whose models switch to `PlainModel`.
MODEL_MODULES = ("tpu_runtime.diagnose.profile_model", "tpu_runtime.diagnose.report", "tpu_runtime.workflow")


def use_plain_models() -> None:
    """Define the models of `MODEL_MODULES` on `PlainModel` in this process; only before any of them is
    imported (a process never holds both kinds)."""
    global PLAIN
    loaded = [name for name in MODEL_MODULES if name in sys.modules]
    if loaded:
        raise RuntimeError(f"plain models asked for after {', '.join(loaded)} was imported")
    PLAIN = True


class _Missing:
    def __repr__(self) -> str:
        return "<required>"


_REQUIRED = _Missing()


class _FieldSpec:
    """A field's default (or factory), as pydantic's `Field(...)` gives it; the rest is ignored."""

    __slots__ = ("default", "factory")

    def __init__(self, default: Any = _REQUIRED, factory: Any = None) -> None:
        self.default = _REQUIRED if default is Ellipsis else default
        self.factory = factory

    def value(self) -> Any:
        """A fresh default: mutable ones are copied for each instance, as pydantic does."""
        if self.factory is not None:
            return self.factory()
        if isinstance(self.default, (list, dict, set)):
            return copy.deepcopy(self.default)
        return self.default


def plain_field(default: Any = _REQUIRED, *, default_factory: Any = None, **_constraints: Any) -> Any:
    """Stands for `pydantic.Field`: keeps the default; descriptions and constraints do not apply."""
    return _FieldSpec(default, default_factory)


def plain_config(**options: Any) -> dict[str, Any]:
    """Stands for `pydantic.ConfigDict`."""
    return dict(options)


class PlainModel:
    """Stands for `pydantic.BaseModel` where a model is only constructed and read: its fields are the
    class's annotated names, in order, with their defaults; `model_construct` and the constructor set
    them as given, without validating."""

    _plain_fields: ClassVar[dict[str, _FieldSpec]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields = dict(cls._plain_fields)
        for name in inspect.get_annotations(cls):
            if name.startswith("_"):
                continue
            value = cls.__dict__.get(name, _REQUIRED)
            spec = value if isinstance(value, _FieldSpec) else _FieldSpec(value)
            fields[name] = spec
            if value is not _REQUIRED:
                delattr(cls, name)  # as pydantic: a field is an attribute of instances, not of the class
        cls._plain_fields = fields

    def __init__(self, **values: Any) -> None:
        self._plain_set(values)

    @classmethod
    def model_construct(cls, **values: Any) -> Any:
        self = cls.__new__(cls)
        self._plain_set(values)
        return self

    def _plain_set(self, values: dict[str, Any]) -> None:
        for name, spec in self._plain_fields.items():
            if name in values:
                setattr(self, name, values[name])
            elif spec.default is not _REQUIRED or spec.factory is not None:
                setattr(self, name, spec.value())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__name__}({shown})"


#: The annotations under which pydantic writes an int as a float in JSON (`1` as `1.0`); any other
#: annotation naming float is refused by `plain_dump` rather than guessed.
_FLOAT, _FLOAT_VALUES = frozenset({"float", "float | None", "None | float"}), "dict[str, float]"


def _float_fields(cls: type[PlainModel]) -> tuple[frozenset[str], frozenset[str]]:
    """(fields declared float, fields declared dict[str, float]) of a plain model class, from its
    annotations and its bases'."""
    floats: set[str] = set()
    float_values: set[str] = set()
    for klass in reversed(cls.__mro__):
        for name, annotation in inspect.get_annotations(klass).items():
            text = annotation if isinstance(annotation, str) else repr(annotation)
            floats.discard(name)
            float_values.discard(name)
            if text in _FLOAT:
                floats.add(name)
            elif text == _FLOAT_VALUES:
                float_values.add(name)
            elif "float" in text:
                raise TypeError(f"{cls.__name__}.{name}: no plain JSON for {text!r}")
    return frozenset(floats), frozenset(float_values)


_FLOATS: dict[type, tuple[frozenset[str], frozenset[str]]] = {}


def _as_float(value: Any) -> Any:
    return float(value) if type(value) is int else value


def plain_dump(value: Any) -> Any:
    """A plain model as pydantic's `model_dump(mode="json")` gives it: fields in order, nested models as
    dicts, an int in a float field as a float; other values (str, int, float, bool, None, lists and
    dicts of them) as they are."""
    if isinstance(value, PlainModel):
        cls = type(value)
        if cls not in _FLOATS:
            _FLOATS[cls] = _float_fields(cls)
        floats, float_values = _FLOATS[cls]
        out: dict[str, Any] = {}
        for name in cls._plain_fields:
            if name not in vars(value):
                continue  # a required field never set: pydantic leaves it out too
            item = getattr(value, name)
            if name in floats:
                out[name] = _as_float(item)
            elif name in float_values:
                out[name] = {k: _as_float(v) for k, v in item.items()}
            else:
                out[name] = plain_dump(item)
        return out
    if isinstance(value, (list, tuple)):
        return [plain_dump(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_dump(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise TypeError(f"no plain JSON for a {type(value).__name__}")
