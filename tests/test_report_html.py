"""The HTML report in a real headless browser (Debian's chromium at /usr/bin/chromium, driven by Playwright's
Python package; no browser download): it loads with no console errors and no network fetches, shows every
framework column present in the results, opens a run's details from its matrix cell, and a screenshot is taken.

Skipped when Playwright or /usr/bin/chromium is missing, unless LOOPBENCH_REQUIRE_BROWSER=1 (then it fails).
Set LOOPBENCH_SCREENSHOT_DIR to keep the screenshots.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from loopbench.reports.build import build_reports
from loopbench.reports.load import load_records

DATA = Path(__file__).parent / "data" / "reports_small"
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def _need(ok: bool, why: str) -> None:
    if not ok:
        if os.environ.get("LOOPBENCH_REQUIRE_BROWSER") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _need(False, "the playwright package is not installed")
    _need(CHROMIUM.exists(), f"{CHROMIUM} is not installed (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def report(tmp_path: Path) -> Path:
    d = tmp_path / "results"
    shutil.copytree(DATA, d)
    build_reports(d, {"html"})
    return d / "report.html"


def test_report_html_in_a_browser(browser, report: Path, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1366, "height": 768})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri(), wait_until="load")

    assert page.title() == "loopbench report"
    headers = page.locator("table.matrix thead th.fw").evaluate_all("els => els.map(e => e.dataset.framework)")
    frameworks = {r.framework for r in load_records(report.parent)}
    assert frameworks <= set(headers), f"framework columns {headers} lack some of {frameworks}"
    assert page.locator("table.matrix td[data-verdict=deviates]").count() > 0
    assert page.locator("table.matrix .unstable").count() == 1

    # a matrix cell leads to its run's details, opened
    run_id = "runaway_step_limit-openai-agents-default-r1-254c8f"
    page.locator(f'table.matrix a[href="#run-{run_id}"]').first.click()
    details = page.locator(f"details#run-{run_id}")
    assert details.evaluate("d => d.open") is True
    assert "MaxTurnsExceeded" in details.inner_text()

    page.goto(report.as_uri() + "#matrix")
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot))
    full = tmp_path / "report-full.png"
    page.screenshot(path=str(full), full_page=True)
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000
    keep = os.environ.get("LOOPBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report.png")
        shutil.copy(full, Path(keep) / "report-full.png")

    assert not problems, problems
    assert all(u.startswith(("file:", "data:")) for u in requests), [u for u in requests if not u.startswith("file:")]
    page.close()
