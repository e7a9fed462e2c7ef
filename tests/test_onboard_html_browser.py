"""The onboarding HTML report in a real browser, at 1280 and 1920 px: no table or chart runs past its card,
identifiers (op, module, source) are not broken mid-name, and the page logs no console error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.browser_support import launch, open_and_measure, require_browser
from tests.conftest import REPO
from tpu_runtime.cli.app import app

pytestmark = pytest.mark.slow
CHROMIUM = require_browser()

MEASURE = """() => {
  const tables = [...document.querySelectorAll('table')].map(table => {
    const card = table.closest('section');
    return {section: card.id, scroll: table.scrollWidth, client: card.clientWidth};
  });
  const charts = [...document.querySelectorAll('img, svg')].map(el => ({
    right: el.getBoundingClientRect().right, card: el.closest('section').getBoundingClientRect().right,
  }));
  const idents = [...document.querySelectorAll('td.ident code')].map(code => ({
    text: code.innerText, lines: code.getClientRects().length,
  }));
  return {tables, charts, idents, pageWidth: document.documentElement.scrollWidth};
}"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    html = tmp_path_factory.mktemp("onboard-html") / "report.html"
    result = CliRunner().invoke(app, ["onboard", str(REPO / "examples" / "tiny_gpt.py"), "--html", str(html)])
    assert result.exit_code == 0, result.output
    return html


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch(CHROMIUM)


@pytest.mark.parametrize("width", [1280, 1920])
def test_onboard_report_reads_whole_in_a_browser(
    browser: Any, report: Path, width: int, tmp_path: Path
) -> None:
    errors, measured = open_and_measure(browser, report, width, MEASURE, f"onboard-{width}.png", tmp_path)

    assert errors == []
    assert measured["pageWidth"] <= width
    for table in measured["tables"]:
        assert table["scroll"] <= table["client"], f"a table in {table['section']} runs past its card"
    for chart in measured["charts"]:
        assert chart["right"] <= chart["card"] + 0.5
    assert measured["idents"], "the example has risks: their op/module/source cells are measured"
    broken = [i["text"] for i in measured["idents"] if i["lines"] > 1]
    assert broken == [], f"identifiers broken across lines: {broken}"
