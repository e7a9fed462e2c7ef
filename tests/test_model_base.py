"""The plain stand-in for the report and playbook models (`tpu_runtime.model_base`) holds what pydantic's
classes hold: the same models, the same fields in the same order, the same defaults, constructed the same
way; and a process gets it only when it asks before any model module is loaded."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.conftest import SHARED_FIXTURES
from tests.subprocess_support import run_text
from tpu_runtime import model_base
from tpu_runtime.model_base import PlainModel, plain_field

REPO = Path(__file__).resolve().parents[1]
V6E = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"

#: Each model of the switched modules: its fields in order, with the repr of a fresh default or
#: "<required>"; run in a fresh interpreter, plain or not.
_DESCRIBE = """
import importlib, json, sys
from tpu_runtime import model_base
if sys.argv[1] == "plain":
    model_base.use_plain_models()
out = {}
required = model_base._REQUIRED
for module_name in model_base.MODEL_MODULES:
    module = importlib.import_module(module_name)
    for name, cls in vars(module).items():
        fields = getattr(cls, "_plain_fields", None) if sys.argv[1] == "plain" else None
        if fields is not None and cls.__module__ == module_name:
            out[f"{module_name}.{name}"] = [
                [f, "<required>" if s.default is required and s.factory is None else repr(s.value())]
                for f, s in fields.items()
            ]
        elif sys.argv[1] != "plain" and hasattr(cls, "model_fields") and cls.__module__ == module_name:
            out[f"{module_name}.{name}"] = [
                [f, "<required>" if info.is_required() else repr(info.get_default(call_default_factory=True))]
                for f, info in cls.model_fields.items()
            ]
print(json.dumps({"out": out, "pydantic": "pydantic" in sys.modules}))
"""


def _describe(kind: str) -> dict[str, Any]:
    done = run_text([sys.executable, "-c", _DESCRIBE, kind], timeout=120, check=True)
    described: dict[str, Any] = json.loads(done.stdout)
    return described


def test_plain_models_have_pydantics_fields_and_defaults() -> None:
    """Every model of the switched modules, both ways; the plain process loads no pydantic at all."""
    plain, real = _describe("plain"), _describe("pydantic")
    assert plain["out"] == real["out"]
    assert len(real["out"]) > 30
    assert "tpu_runtime.diagnose.profile_model.ProfileSummary" in real["out"]
    assert "tpu_runtime.workflow.Workflow" in real["out"]
    assert (plain["pydantic"], real["pydantic"]) == (False, True)


def test_plain_models_are_asked_for_before_the_models_load() -> None:
    """This test process has pydantic's models already: asking for plain ones now is refused."""
    importlib.import_module("tpu_runtime.diagnose.report")
    with pytest.raises(RuntimeError, match=r"tpu_runtime\.diagnose\.report"):
        model_base.use_plain_models()
    assert model_base.PLAIN is False
    from tpu_runtime.diagnose.report import DiagnoseReport

    assert issubclass(DiagnoseReport, BaseModel)


class _Example(PlainModel):
    name: str
    rows: list[int] = []  # noqa: RUF012 (a model field: copied for each instance)
    table: dict[str, int] = plain_field(default_factory=dict, description="ignored")
    limit: int | None = plain_field(default=None, ge=0)


def test_plain_construction_sets_fields_and_copies_mutable_defaults() -> None:
    first, second = _Example.model_construct(name="a"), _Example(name="b", limit=3)
    first.rows.append(1)
    first.table["x"] = 1
    assert (second.rows, second.table, second.limit, first.limit) == ([], {}, 3, None)
    assert repr(first) == "_Example(name='a', rows=[1], table={'x': 1}, limit=None)"
    missing = _Example.model_construct()
    with pytest.raises(AttributeError):
        _ = missing.name  # as pydantic's model_construct: a required field not given is not set
    assert not hasattr(_Example, "rows")  # fields belong to instances, as in pydantic


def test_the_route_takes_plain_models_only_for_a_profile_it_can_report_without_validation(
    tmp_path: Path,
) -> None:
    """A profile (file or folder) with the playbook precompiled: yes. A crash log (its rules validate
    their models), a missing path, or a playbook out of date with its precompiled form: no."""
    if not V6E.is_file():
        pytest.skip("the shared v6e profile is not beside this checkout")
    crash = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"
    script = textwrap.dedent(
        """
        import sys
        from tpu_runtime import yaml_data
        if sys.argv[2] == "stale":
            yaml_data.compiled = lambda sheet, what: None
        from tpu_runtime.cli.diagnose_route import plain_models_serve
        print(plain_models_serve(sys.argv[1]))
        """
    )
    cases = [(V6E, "current", "True"), (V6E.parent, "current", "True"), (V6E, "stale", "False")]
    cases.append((crash, "current", "False"))
    cases.append((tmp_path / "missing.xplane.pb", "current", "False"))
    for path, sheets, expected in cases:
        done = run_text([sys.executable, "-c", script, str(path), sheets], timeout=120, check=True)
        assert done.stdout.strip() == expected, (path, sheets)


_PLAIN_JSON = """
import json, sys
from tpu_runtime import model_base
model_base.use_plain_models()
from tpu_runtime.diagnose.job import run_diagnose
data = model_base.plain_dump(run_diagnose(sys.argv[1:], 15))
data.pop("timings")
print(json.dumps(data))
"""


def test_plain_json_is_pydantics_json_on_profiles(tmp_path: Path) -> None:
    """The whole report of each profile, plain and dumped by `plain_dump` in a fresh process, against
    pydantic's `model_dump(mode="json")` here (but for the step times): the fixtures, a copy whose peaks
    come from the chip table, and a run folder."""
    from tests.profiles_synth import edit_device_stats, load_space, write_space
    from tpu_runtime.diagnose.job import run_diagnose

    gpu = V6E.parent / "gpu_v100_bert.xplane.pb"
    if not (V6E.is_file() and gpu.is_file()):
        pytest.skip("the shared profiles are not beside this checkout")
    space = load_space(V6E)
    edit_device_stats(space, drop=["peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second"])
    no_peaks = write_space(space, tmp_path / "run" / "no_peaks.xplane.pb")
    for paths in ([V6E], [gpu], [no_peaks], [no_peaks.parent], [V6E, gpu]):
        args = [str(p) for p in paths]
        done = run_text([sys.executable, "-c", _PLAIN_JSON, *args], timeout=120, check=True)
        expected = run_diagnose(args, 15).model_dump(mode="json")
        expected.pop("timings")
        assert json.loads(done.stdout) == expected, args
        assert done.stdout.strip() == json.dumps(expected)  # same types too: 1.0 stays 1.0


def test_plain_dump_writes_an_int_in_a_float_field_as_pydantic_does() -> None:
    class Row(PlainModel):
        ms: float
        share: float | None = None
        count: int = 0
        by_name: dict[str, float] = plain_field(default_factory=dict)

    class Table(PlainModel):
        rows: list[Row] = plain_field(default_factory=list)
        best: Row | None = None

    class PydanticRow(BaseModel):
        ms: float
        share: float | None = None
        count: int = 0
        by_name: dict[str, float] = {}

    class PydanticTable(BaseModel):
        rows: list[PydanticRow] = []
        best: PydanticRow | None = None

    values = {"ms": 3, "share": 2, "count": 4, "by_name": {"a": 1, "b": 0.5}}
    plain = Table.model_construct(rows=[Row.model_construct(**values), Row(ms=1.5)], best=None)
    real = PydanticTable.model_construct(
        rows=[PydanticRow.model_construct(**values), PydanticRow(ms=1.5)], best=None
    )
    dumped = model_base.plain_dump(plain)
    assert dumped == real.model_dump(mode="json")
    assert json.dumps(dumped) == json.dumps(real.model_dump(mode="json"))
    assert dumped["rows"][0]["ms"] == 3.0 and isinstance(dumped["rows"][0]["ms"], float)

    class Odd(PlainModel):
        spans: list[float] = plain_field(default_factory=list)

    with pytest.raises(TypeError, match="spans"):
        model_base.plain_dump(Odd.model_construct(spans=[1]))
