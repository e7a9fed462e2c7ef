"""The version-skew family that round diag152 added to the rules (docs/diagnose-accuracy.md).

A `X | None` annotation (PEP 604) evaluated by a Python older than 3.10 fails with Python's own operand
message, naming a type on each side: the package holding the annotation was installed into an interpreter
its release no longer supports. The cases are worded apart from the collected log (another package, a
generic alias, another Python), and the nearby wordings with a value on one side (a tensor, a string forward
reference) are the program's own operand errors, which the rule must not claim.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose

_RULE = "version_mismatch/pep604_union_on_old_python"


def _annotation_failure(python: str, left: str, right: str) -> str:
    """An import-time traceback whose last frame is an installed package's annotated signature."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/serve.py", line 3, in <module>\n'
        "    import weather_lib\n"
        f'  File "/opt/venv/lib/{python}/site-packages/weather_lib/io.py", line 58, in <module>\n'
        "    def open_store(path: list[str] | None = None) -> Store | None:\n"
        f"TypeError: unsupported operand type(s) for |: '{left}' and '{right}'"
    )


@pytest.mark.parametrize(
    ("python", "left", "right"),
    [
        ("python3.8", "types.GenericAlias", "NoneType"),
        ("python3.9", "type", "type"),
        ("python3.7", "_GenericAlias", "NoneType"),
    ],
)
def test_a_type_union_on_an_old_python_asks_for_a_newer_python(python: str, left: str, right: str) -> None:
    crash = _diagnose(_annotation_failure(python, left, right))
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == _RULE
    assert f"(here {python})" in crash.fix
    assert "newer Python" in crash.fix


def test_the_interpreter_is_left_out_when_no_frame_names_it() -> None:
    crash = _diagnose("TypeError: unsupported operand type(s) for |: 'type' and 'NoneType'")
    assert crash.evidence.fix_rule == _RULE
    assert "(here" not in crash.fix


@pytest.mark.parametrize(
    "message",
    [
        "TypeError: unsupported operand type(s) for |: 'Tensor' and 'NoneType'",
        "TypeError: unsupported operand type(s) for |: 'type' and 'str'",
        "TypeError: unsupported operand type(s) for +: 'type' and 'NoneType'",
    ],
)
def test_a_value_operand_is_not_read_as_an_old_python(message: str) -> None:
    """A tensor or a string forward reference beside `|`, or another operator, is the program's own error."""
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.12/site-packages/weather_lib/mask.py", line 20, in merge\n'
        "    return a | b\n"
        f"{message}"
    )
    assert crash.evidence.fix_rule != _RULE
    assert "PEP 604" not in crash.fix
