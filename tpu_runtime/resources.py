"""Where the data folders that ship beside the engine live.

In a source checkout they sit at the repository root (`knowledge/`, `workflows/`, `agents/`, `examples/`).
In an installed wheel, hatch copies them to `tpu_runtime/_bundled/<name>` (see `pyproject.toml`,
`[tool.hatch.build.targets.wheel.force-include]`).
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_CHECKOUT_ROOT = _PACKAGE_DIR.parent


def _resource_dir(name: str) -> Path:
    """The checkout's `<root>/<name>` if this is a source checkout, else the wheel's bundled copy.

    A checkout is recognised by `pyproject.toml` beside the folder, so an unrelated `knowledge/` folder in
    site-packages is never picked up by an installed wheel.
    """
    checkout = _CHECKOUT_ROOT / name
    if checkout.is_dir() and (_CHECKOUT_ROOT / "pyproject.toml").is_file():
        return checkout
    bundled = _PACKAGE_DIR / "_bundled" / name
    if bundled.is_dir():
        return bundled
    raise FileNotFoundError(
        f"cannot find the '{name}' folder: looked for {checkout} (source checkout) and {bundled} "
        "(installed wheel); reinstall tpu-agent or run from a checkout"
    )


def knowledge_dir() -> Path:
    """Team-written fact sheets (`chips.yaml`, `vllm_tpu_models.yaml`, ...)."""
    return _resource_dir("knowledge")


def workflows_dir() -> Path:
    """Step-by-step playbooks the agents follow."""
    return _resource_dir("workflows")


def agents_dir() -> Path:
    """Agent definitions (Markdown with YAML front matter)."""
    return _resource_dir("agents")


def examples_dir() -> Path:
    """Example models and inputs."""
    return _resource_dir("examples")
