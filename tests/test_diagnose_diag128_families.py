"""Families of wording that round diag128 added to the rules: version skew outputs from issue threads.

A jax module alias that jax removed, reached by older library code (`jax_removed_module_alias`), and the
same AttributeError pasted without its "AttributeError: " prefix, which the version_mismatch pattern and the
stale-module facts now read at the start of a line.

Each case is another wording of its family (another alias, another caller's traceback), and the family has a
nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_haiku_reaching_the_removed_jax_xla_alias() -> None:
    assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/site-packages/haiku/_src/base.py", line 31, in <module>\n'
        "    from jax import xla\n"
        "AttributeError: module 'jax' has no attribute 'xla'",
        "version_mismatch",
        "jax_removed_module_alias",
        "--upgrade",
    )


def test_the_alias_pasted_without_its_exception_name() -> None:
    assert_fixed_by(
        "module 'jax' has no attribute 'abstract_arrays'",
        "version_mismatch",
        "jax_removed_module_alias",
        "jax.interpreters",
    )


def test_a_newer_jax_api_or_an_alias_of_a_submodule_is_not_a_removed_alias() -> None:
    assert_not_claimed("AttributeError: module 'jax' has no attribute 'api_util'", "jax_removed_module_alias")
    assert_not_claimed("AttributeError: module 'jax' has no attribute 'tree'", "jax_removed_module_alias")
    assert_not_claimed(
        "AttributeError: module 'jax.interpreters.xla' has no attribute 'DeviceArray'",
        "jax_removed_module_alias",
    )
