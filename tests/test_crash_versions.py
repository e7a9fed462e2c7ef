"""The one reader of package versions in a crash log (crash_versions), and the facts built on it.

Every wording below is invented in the shape the printing tool uses: `pip list` columns, `pip freeze`
pins, `pip show` records, `jax.print_environment_info()` lines and prose.
"""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_facts import generic_facts, version_skew_facts
from tpu_runtime.diagnose.crash_release_facts import jax_config_flag_facts
from tpu_runtime.diagnose.crash_versions import MAX_PACKAGES, package_versions

PIP_LIST = [
    "Package          Version",
    "---------------- ---------",
    "jax              0.4.26",
    "jaxlib   0.4.31",
]
PIP_FREEZE = ["flax==0.8.2", "jax==0.4.26", "jaxlib==0.4.31", "numpy==1.26.4"]
PIP_SHOW = [
    "Name: jax",
    "Version: 0.4.26",
    "Summary: Differentiate, compile, and transform Numpy code.",
    "---",
    "Name: jaxlib",
    "Version: 0.4.31",
]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (PIP_LIST, {"jax": "0.4.26", "jaxlib": "0.4.31"}),
        (PIP_FREEZE, {"flax": "0.8.2", "jax": "0.4.26", "jaxlib": "0.4.31"}),
        (PIP_SHOW, {"jax": "0.4.26", "jaxlib": "0.4.31"}),
        (["jax:    0.4.26", "jaxlib: 0.4.31"], {"jax": "0.4.26", "jaxlib": "0.4.31"}),
        (["using jaxlib version 0.4.14 with torch-xla 2.3.0"], {"jaxlib": "0.4.14", "torch_xla": "2.3.0"}),
        (["libtpu-nightly   0.1.dev20240403"], {"libtpu_nightly": "0.1.dev20240403"}),
    ],
)
def test_each_wording_of_a_version_print_is_read(lines: list[str], expected: dict[str, str]) -> None:
    assert package_versions(lines) == expected


@pytest.mark.parametrize(
    "line",
    [
        '  File "/opt/venv/lib/python3.11/site-packages/jax-0.4.26/jax/_src/api.py", line 10, in f',
        "jax 0.4.26/jax/_src/api.py is where it failed",
        "Name: jax",  # a pip show record without its Version line
        "Version: 0.4.26",  # a Version line that follows no package name
    ],
)
def test_a_path_or_half_a_record_is_no_version(line: str) -> None:
    assert package_versions([line]) == {}


def test_a_pip_show_version_belongs_only_to_the_record_it_ends() -> None:
    lines = ["Name: jax", "Summary: something else", "Version: 0.4.26"]
    assert package_versions(lines) == {}


def test_the_first_version_a_log_states_wins_and_the_count_is_capped() -> None:
    assert package_versions(["jax==0.4.26", "jax==0.4.30"]) == {"jax": "0.4.26"}
    many = [f"{pkg}=={i}.0" for i, pkg in enumerate(("jax", "jaxlib", "torch", "vllm", "flax"))] * 3
    assert len(package_versions(many)) <= MAX_PACKAGES


@pytest.mark.parametrize("prints", [PIP_LIST, PIP_FREEZE, PIP_SHOW])
def test_version_skew_reads_pip_output(prints: list[str]) -> None:
    facts = version_skew_facts(prints)
    assert facts["version_skew"] == "jax 0.4.26 with jaxlib 0.4.31"
    assert "jax[tpu]==0.4.26" in facts["skew_command"]


@pytest.mark.parametrize("prints", [PIP_LIST, PIP_FREEZE, PIP_SHOW])
def test_the_config_flag_release_reads_the_same_wordings(prints: list[str]) -> None:
    lines = [*prints, "AttributeError: 'Config' object has no attribute 'jax_invented_flag'"]
    facts = jax_config_flag_facts(lines)
    assert facts == {"config_flag": "jax_invented_flag", "jax_installed": "0.4.26", "jax_previous": "0.4.25"}


def test_the_versions_fact_and_the_skew_agree() -> None:
    facts = generic_facts(PIP_LIST)
    assert facts["versions"] == {"jax": "0.4.26", "jaxlib": "0.4.31"}
