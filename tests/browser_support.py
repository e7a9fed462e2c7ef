"""A real browser for the HTML report tests: Debian's chromium, driven by Playwright's Python package.

scripts/test.sh installs chromium with apt; `playwright install` (which downloads browsers) is never used.
Test modules call `require_browser()` at import, so they skip with the reason when either is missing.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
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


def open_and_measure(
    browser: Any, report: Path, width: int, script: str, shot: str, tmp_path: Path
) -> tuple[list[str], Any]:
    """Open `report` at `width` pixels, save a full-page screenshot named `shot` (in $TPU_AGENT_SCREENSHOTS
    when set, else `tmp_path`) and run `script` on the page: the page's errors and the script's result."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(report.as_uri())
    shots = Path(os.environ.get("TPU_AGENT_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / shot), full_page=True)
    measured = page.evaluate(script)
    page.close()
    return errors, measured
