"""The diagnose HTML reports in a real browser: Debian's chromium driven by Playwright's Python package.

Each report is loaded at 1280 and 1920 px; no table may run past its card, op rows stay one or two text
lines high, header text keeps its case ("µs", not "MS"), charts fit their card, and the page logs no
console error. Screenshots go to the test's temporary folder (or to $TPU_AGENT_SCREENSHOTS when set) so a
person can look at them. scripts/test.sh installs chromium with apt; `playwright install` is never used.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.browser_support import launch, open_and_measure, require_browser
from tests.conftest import SHARED_FIXTURES
from tests.profiles_synth import load_space, scale_op, write_space
from tpu_runtime.cli.app import app

pytestmark = pytest.mark.slow

V6E = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"
GPU = SHARED_FIXTURES / "profiles" / "gpu_v100_bert.xplane.pb"
WIDTHS = (1280, 1920)
#: An op row holds the op's figures on one line; its origin row wraps to at most three lines.
MAX_ROW_PX = 64


CHROMIUM = require_browser()
if not V6E.is_file():
    pytest.skip(f"shared fixture {V6E} is absent", allow_module_level=True)

#: For every table: its right edge and width against the card (section) that holds it, and its rows.
MEASURE = """() => {
  const out = [];
  for (const table of document.querySelectorAll('table')) {
    const card = table.closest('section');
    const box = card.getBoundingClientRect();
    const style = getComputedStyle(card);
    const inner = box.right - parseFloat(style.paddingRight) - parseFloat(style.borderRightWidth);
    out.push({
      section: card.id || card.className,
      right: table.getBoundingClientRect().right,
      inner: inner,
      scroll: table.scrollWidth,
      client: card.clientWidth,
      ops: table.classList.contains('ops'),
      rows: [...table.querySelectorAll('tr.op, tr.origin')].map(r => r.getBoundingClientRect().height),
      headers: [...table.querySelectorAll('th')].map(th => th.innerText),
      transforms: [...table.querySelectorAll('th')].map(th => getComputedStyle(th).textTransform),
    });
  }
  const charts = [...document.querySelectorAll('svg')].map(svg => {
    const card = svg.closest('section').getBoundingClientRect();
    return {right: svg.getBoundingClientRect().right, card: card.right};
  });
  return {tables: out, charts: charts, pageWidth: document.documentElement.scrollWidth};
}"""


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The profile report, a comparison with a slowed copy, and a comparison refused across kinds."""
    folder = tmp_path_factory.mktemp("html")
    space = load_space(V6E)
    scale_op(space, "broadcast_add_fusion.1", 2.0)
    slowed = write_space(space, folder / "slowed" / "slowed.xplane.pb")
    runner = CliRunner()
    jobs = {
        "profile": [str(V6E)],
        "compare": [str(slowed), "--compare", str(V6E)],
    }
    if GPU.is_file():
        jobs["across_kinds"] = [str(V6E), "--compare", str(GPU)]
    out: dict[str, Path] = {}
    for name, args in jobs.items():
        html = folder / f"{name}.html"
        result = runner.invoke(app, ["diagnose", *args, "--top", "15", "--html", str(html)])
        assert result.exit_code == 0, result.output
        out[name] = html
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch(CHROMIUM)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["profile", "compare", "across_kinds"])
def test_report_fits_its_cards_in_a_browser(
    browser: Any, reports: dict[str, Path], name: str, width: int, tmp_path: Path
) -> None:
    if name not in reports:
        pytest.skip(f"shared fixture {GPU} is absent")
    errors, measured = open_and_measure(
        browser, reports[name], width, MEASURE, f"diagnose-{name}-{width}.png", tmp_path
    )

    assert errors == []
    assert measured["pageWidth"] <= width  # no horizontal scrolling of the page itself
    assert measured["tables"]
    for table in measured["tables"]:
        where = f"{name} at {width}px, table in {table['section']}"
        assert table["right"] <= table["inner"] + 0.5, where
        assert table["scroll"] <= table["client"], where
        assert set(table["transforms"]) <= {"none"}, where
        if table["ops"]:
            assert table["rows"] and max(table["rows"]) <= MAX_ROW_PX, (where, max(table["rows"]))
            assert "avg/run (µs)" in table["headers"], where
    for chart in measured["charts"]:
        assert chart["right"] <= chart["card"], f"{name} at {width}px: a chart runs past its card"
