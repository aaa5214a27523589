"""The HTML report in a real headless browser (Debian's chromium at /usr/bin/chromium, driven by Playwright's
Python package; no browser download), at 1400 px: it loads with no console errors and no network fetches; the
scorecard is on the first screen; every framework column of a nine-column suite fits; a matrix cell opens its
run's details; the filters hide rows; a report against a baseline marks the changed cell. Screenshots are taken.

Skipped when Playwright or /usr/bin/chromium is missing, unless LOOPBENCH_REQUIRE_BROWSER=1 (then it fails).
Set LOOPBENCH_SCREENSHOT_DIR to keep the screenshots.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path
from typing import get_args

import pytest

from loopbench.harness.record import Outcome, Verdict
from loopbench.reports.build import build_reports
from loopbench.reports.cells import cells
from loopbench.reports.load import load_records
from tests.edit_results import rewritten

TIER = "unit"

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


WIDTH, HEIGHT = 1400, 900
# the published suite's columns: nine framework variants
NINE = [("claude-agent-sdk", "default"), ("claude-agent-sdk", "can-use-tool"), ("langgraph", "default"),
        ("langgraph", "model-call-limit"), ("langgraph", "stategraph"), ("openai-agents", "default"),
        ("openai-agents", "handled-max-turns"), ("vercel-ai", "default"), ("vercel-ai", "tool-loop-agent")]


@pytest.fixture
def report(tmp_path: Path) -> Path:
    d = tmp_path / "results"
    shutil.copytree(DATA, d)
    build_reports(d, {"html"})
    return d / "report.html"


def _keep(*shots: Path) -> None:
    keep = os.environ.get("LOOPBENCH_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        for shot in shots:
            shutil.copy(shot, Path(keep) / shot.name)


def _page(browser, problems: list[str]):
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    return page


def _nine_columns(tmp_path: Path, edit=None) -> Path:
    """The fixture's openai-agents runs as nine framework variants (the published suite's width)."""
    d = tmp_path / "nine"
    d.mkdir(exist_ok=True)
    base = [json.loads(x) for x in (DATA / "results.jsonl").read_text().splitlines()]
    lines = []
    for i, (fw, variant) in enumerate(NINE):
        for r in base:
            if r["framework"] != "openai-agents":
                continue
            r = dict(r, framework=fw, variant=variant, run_id=f"{r['run_id']}-{i}")
            if edit:
                edit(r)
            lines.append(json.dumps(r))
    (d / "results.jsonl").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.process  # a real browser
def test_report_html_in_a_browser(browser, report: Path, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    problems: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri(), wait_until="load")

    assert page.title() == "loopbench report"
    card = page.locator("table.scorecard").bounding_box()
    assert card is not None and card["y"] < HEIGHT, "the scorecard is not on the first screen"
    headers = page.locator("table.matrix thead th.fw").evaluate_all("els => els.map(e => e.dataset.framework)")
    frameworks = {r.framework for r in load_records(report.parent)}
    assert frameworks <= set(headers), f"framework columns {headers} lack some of {frameworks}"
    assert page.locator("table.matrix td[data-verdict=deviates]").count() > 0
    assert page.locator("table.matrix .unstable").count() == 1
    # every ⚠ and ⊘ cell says in words, visibly, what deviates; the glossary is on the page
    whys = page.locator("table.matrix td[data-verdict=deviates], table.matrix td[data-verdict=unsupported]")
    assert whys.count() == 12
    assert whys.evaluate_all("els => els.every(e => { const w = e.querySelector('ul.why');"
                             " return w && w.offsetHeight > 0 && w.innerText.trim().length > 0; })")
    assert page.locator("table.matrix td[data-verdict=conforms] ul.why").count() == 0
    assert page.locator("#glossary dl dt").count() >= len(get_args(Outcome)) + len(get_args(Verdict))
    page.locator('a[href="#glossary"]').first.click()
    assert page.locator("#glossary").is_visible()

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
    _keep(shot, full)

    assert not problems, problems
    assert all(u.startswith(("file:", "data:")) for u in requests), [u for u in requests if not u.startswith("file:")]
    page.close()


@pytest.mark.process  # a real browser
def test_nine_framework_columns_fit_and_the_filters_hide_rows(browser, tmp_path: Path) -> None:
    d = _nine_columns(tmp_path)
    build_reports(d, {"html"})
    problems: list[str] = []
    page = _page(browser, problems)
    page.goto((d / "report.html").as_uri(), wait_until="load")
    top = tmp_path / "report-nine-top.png"
    page.screenshot(path=str(top))
    # the scorecard: one row per framework variant, on the first screen
    assert page.locator("table.scorecard tbody tr").count() == 9
    assert page.locator("table.scorecard").bounding_box()["y"] < HEIGHT
    page.goto((d / "report.html").as_uri() + "#matrix")
    boxes = page.locator("table.matrix thead th.fw").evaluate_all(
        "els => els.map(e => { const b = e.getBoundingClientRect(); return [e.dataset.column, b.left, b.right]; })")
    assert len(boxes) == 9
    assert all(0 <= left and right <= WIDTH for _, left, right in boxes), boxes
    matrix = tmp_path / "report-nine-matrix.png"
    page.screenshot(path=str(matrix))

    rows = page.locator("table.matrix tr.row")
    total = rows.count()
    visible = "els => els.filter(e => !e.hidden).length"
    page.select_option("#f-verdict", "deviates")
    shown = rows.evaluate_all(visible)
    assert 0 < shown < total
    assert rows.evaluate_all("els => els.filter(e => !e.hidden).every(e => e.querySelector("
                             "'td[data-verdict=deviates]'))")
    assert page.locator("#f-count").inner_text() == f"{shown} scenario(s) shown"
    page.select_option("#f-verdict", "")
    page.select_option("#f-category", "limits")
    assert rows.evaluate_all("els => els.filter(e => !e.hidden).map(e => e.dataset.category)") == ["limits"] * 4
    page.select_option("#f-category", "")
    page.select_option("#f-framework", "langgraph:stategraph")
    assert page.locator("table.matrix thead th.fw").evaluate_all(visible) == 1
    page.select_option("#f-framework", "")
    page.fill("#f-text", "policy")
    assert 0 < rows.evaluate_all(visible) < total
    page.fill("#f-text", "")
    assert rows.evaluate_all(visible) == total
    # a framework's header sorts its worst cells first; a second click restores the suite order
    order = rows.evaluate_all("els => els.map(e => e.dataset.order)")
    page.locator('table.matrix th.fw[data-column="openai-agents"]').click()
    ranks = page.locator("table.matrix tbody[data-category=limits] td[data-column=openai-agents]").evaluate_all(
        "els => els.map(e => Number(e.dataset.rank))")
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) > 1
    page.locator('table.matrix th.fw[data-column="openai-agents"]').click()
    assert rows.evaluate_all("els => els.map(e => e.dataset.order)") == order
    _keep(top, matrix)
    assert not problems, problems
    page.close()


@pytest.mark.process  # a real browser
def test_a_report_against_a_baseline_marks_the_changed_cell(browser, tmp_path: Path) -> None:
    def doctor(r: dict) -> None:
        if r["scenario"] == "runaway_step_limit" and r["framework"] == "vercel-ai" and r["variant"] == "default":
            r.update(outcome="capped", outcome_rule=3)

    (tmp_path / "b").mkdir()
    base = _nine_columns(tmp_path / "b", doctor)
    new = _nine_columns(tmp_path)
    build_reports(new, {"html"}, baseline=base)
    problems: list[str] = []
    page = _page(browser, problems)
    page.goto((new / "report.html").as_uri() + "#changes", wait_until="load")
    changed = page.locator("table.matrix td.changed")
    assert changed.count() == 1
    assert changed.get_attribute("data-column") == "vercel-ai"
    assert "outcome: capped → limit_steps" in changed.inner_text()
    assert "1 of 99 common cell(s) changed" in page.locator("#changes").inner_text()
    page.check("#f-changed")
    assert page.locator("table.matrix tr.row").evaluate_all("els => els.filter(e => !e.hidden).length") == 1
    shot = tmp_path / "report-baseline.png"
    changed.scroll_into_view_if_needed()
    page.screenshot(path=str(shot))
    _keep(shot)
    assert not problems, problems
    page.close()


# ---------------------------------------------------------------- every mark explains itself (no browser needed)
@pytest.mark.process
def test_the_html_glossary_names_every_outcome_and_verdict(report: Path) -> None:
    from loopbench.reports.notes import UNDESCRIBED

    page = report.read_text()
    glossary = page.split('<section id="glossary">')[1].split("</section>")[0]
    assert page.index('id="matrix"') < page.index('id="glossary"')
    for o in get_args(Outcome):
        assert f"<dt><code>{o}</code></dt><dd>" in glossary, o
    for v in get_args(Verdict):
        assert re.search(rf"<dt>\S+ <code>{v}</code></dt><dd>\w", glossary), v
    assert UNDESCRIBED not in glossary and "docs/policy.md" in glossary
    assert 'href="#glossary"' in page.split('<section id="matrix">')[1]


@pytest.mark.process
def test_every_deviating_html_cell_says_what_deviates_and_marks_its_outcome(tmp_path: Path) -> None:
    from loopbench.reports.severity import describe

    def edit(r: dict) -> None:  # a ⚠ whose only deviation is its outcome (write_timeout_unknown × langgraph's kind)
        if r["scenario"] == "approval_pause" and r["framework"] == "langgraph":
            r.update(outcome="failed", outcome_rule=7, verdict="deviates",
                     deviations=[{"name": "outcome", "ideal": "awaiting_approval", "observed": "failed"}])

    d = rewritten(DATA, tmp_path / "doctored", edit)
    build_reports(d, {"html"})
    page = (d / "report.html").read_text()
    reps = {(c.scenario, c.column): c.rep for c in cells(load_records(d))}
    tds = re.findall(r'<td class="v-(\w+)[^"]*" data-verdict="\w+" data-column="([^"]+)".*?</td>', page)
    found = re.findall(r'(<td class="v-\w+[^"]*" data-verdict="\w+" data-column="[^"]+".*?</td>)', page)
    assert len(tds) == len(found) == 22
    for (verdict, column), td in zip(tds, found, strict=True):
        run = re.search(r'href="#run-([^"]+)"', td).group(1)
        rec = next(r for r in reps.values() if r.run_id == run)
        assert rec.verdict == verdict and (rec.framework == column or column.startswith(rec.framework + ":"))
        crossed = re.search(r'</a> <span class="bad" title="ideal [^"]+">✗</span></span>', td) is not None
        assert crossed == any(x.name == "outcome" for x in rec.deviations), (rec.run_id, td)
        if verdict in ("deviates", "unsupported"):
            why = re.search(r"<ul class=why>(.*?)</ul>", td)
            assert why, f"{rec.run_id}: a {verdict} cell gives no reason"
            for dev in rec.deviations:
                assert html.escape(describe(rec, dev).words) in why.group(1), (rec.run_id, dev)
        else:
            assert "class=why" not in td
    failed = next(td for td in found if "approval_pause-langgraph" in td)
    assert "did not pause for approval (ended failed)" in failed
