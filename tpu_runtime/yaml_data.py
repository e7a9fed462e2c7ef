"""Reading the YAML data files the package ships (rules, remedies, workflows, chip specs) quickly.

PyYAML's `safe_load` parses in pure Python; its C loader (libyaml, present in the PyPI wheels) builds the
same safe objects about ten times faster, which is most of the time `ops show` or `diagnose` on a small
log spent after start-up. The pure-Python loader stays the fallback where libyaml is not built.
"""

from __future__ import annotations

from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, with the C loader when PyYAML has one."""
    return yaml.load(text, Loader=_LOADER)
