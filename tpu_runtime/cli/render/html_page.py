"""The jinja2 page template of an HTML renderer, compiled once with the settings every page shares.

Autoescaping on (all report text is escaped), undefined names fail loudly, and block tags leave no blank
lines; the templates ship in `tpu_runtime/cli/render/templates/` (hatch packages the directory whole).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

import jinja2

__all__ = ["page_template"]


def page_template(name: str, filters: Mapping[str, Callable[..., Any]]) -> jinja2.Template:
    """The compiled template `templates/<name>`, with `filters` available to it."""
    env = jinja2.Environment(
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True
    )
    env.filters.update(filters)
    source = resources.files("tpu_runtime.cli.render").joinpath("templates", name).read_text(encoding="utf-8")
    return env.from_string(source)
