"""A real browser for the HTML report tests: Debian's chromium, driven by Playwright's Python package.

scripts/test.sh installs chromium with apt; `playwright install` (which downloads browsers) is never used.
Test modules call `require_browser()` at import, so they skip with the reason when either is missing.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_browser() -> str:
    """The chromium binary, or skip the calling module with the reason."""
    if importlib.util.find_spec("playwright") is None:
        pytest.skip(
            "playwright is not installed (the test extra: pip install -e '.[test]')", allow_module_level=True
        )
    found = chromium_path()
    if found is None:
        pytest.skip(
            "no chromium binary on PATH (apt-get install chromium; scripts/test.sh does it as root)",
            allow_module_level=True,
        )
    return found


def launch(executable: str) -> Iterator[Any]:
    """A headless chromium for a module-scoped fixture."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield chromium
        chromium.close()
