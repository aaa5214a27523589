"""The pytest plugin (entry point `pytest11`: installing loopbench is enough). `pytest --loopbench` collects one
test item per scenario × framework variant, `approval_pause[langgraph:stategraph]` (`[langgraph]` for a default
variant), and runs the selected ones through the normal runner (warm workers, parallel slots) in the
background while pytest reports them in order. An item fails when its run fails `--loopbench-fail-on`, the
choices and default of `loopbench run --fail-on` (loopbench/fail_on.py): `error` (the default: loopbench's own
error) and/or `deviation` (any verdict but conforms); when its run is `hung` whatever the choice (a test run
that had to be killed is a failing test); and, with `--loopbench-baseline DIR`, when its cell behaves
differently from the baseline's (each change named, as `loopbench diff` names it). The failure text starts with
the run's outcome and verdict, then the top deviations or changes; `-v` shows each item's outcome and verdict
(`PASSED incomplete (deviates)`), and the item's properties (outcome, verdict, run_id; `--junitxml` writes them)
carry them too. `-k` selects items before anything runs; `-x` stops the runner after the first failure (runs
in flight are dropped).

    pytest --loopbench --loopbench-framework langgraph --loopbench-baseline reports/published
    pytest --loopbench --loopbench-scenarios my_scenarios/ -k approval -x
    pytest --loopbench --loopbench-fail-on deviation -v
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from loopbench.fail_on import CHOICES, fail_on_kinds, failing

KEY = pytest.StashKey["_Controller"]()
WAIT_S = 3600.0  # the longest one item waits for its run (the runner's own hard timeouts are shorter)
TOP = 3  # deviations or changes named in a failure's first line


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("loopbench", "loopbench: the scenario suite as test items")
    g.addoption("--loopbench", action="store_true", help="collect one item per scenario × framework variant")
    g.addoption("--loopbench-framework", action="append", default=[], metavar="F[:V]",
                help="only this framework (every variant) or F:VARIANT (repeatable)")
    g.addoption("--loopbench-scenarios", action="append", default=[], metavar="PATH",
                help="your own scenario directory or file instead of the built-in suite (repeatable)")
    g.addoption("--loopbench-baseline", metavar="DIR", help="fail an item whose cell behaves differently here")
    g.addoption("--loopbench-fail-on", action="append", default=[], choices=CHOICES,
                help="as `loopbench run --fail-on`: fail an item whose run is an error (default) or, with deviation, "
                     "has any verdict but conforms (repeatable); a hung run fails its item either way")
    g.addoption("--loopbench-out", metavar="DIR", help="keep the results here (default: a temporary directory)")
    g.addoption("--loopbench-jobs", type=int, metavar="N", help="runs computing at a time (default: a slot per core)")


class LoopbenchSuite(pytest.Collector):
    """The parent of every item: node ids that read `loopbench::<scenario>[<framework variant>]` wherever pytest
    is started (`suite_nodeid`)."""

    def collect(self) -> list[pytest.Item]:  # the items are made by pytest_collection_modifyitems
        return []


class LoopbenchItem(pytest.Item):
    def __init__(self, *, scenario: Any, framework: str, variant: str, unavailable: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario, self.framework, self.variant = scenario, framework, variant
        self.unavailable = unavailable
        self.add_marker(pytest.mark.loopbench)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario.id, self.framework, self.variant)

    def runtest(self) -> None:
        if self.unavailable:
            pytest.skip(f"{self.framework}: {self.unavailable}")
        controller: _Controller = self.config.stash[KEY]
        record = controller.record_of(self)
        # the report's properties: `-v` shows them (pytest_report_teststatus), --junitxml writes them
        self.user_properties += [("outcome", record.outcome), ("verdict", record.verdict),
                                 ("run_id", record.run_id)]
        reasons = _reasons(record, controller.fail_on, controller.changes_against_baseline(record))
        if reasons:
            pytest.fail(f"{record.outcome} ({record.verdict}): {'; '.join(reasons)}\n"
                        f"run {record.run_id}: `loopbench show {record.run_id} --results {controller.out}`",
                        pytrace=False)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (self.scenario.source or "loopbench", None, self.name)


def suite_nodeid(config: pytest.Config) -> str:
    """The suite's node id: `loopbench` in the directory pytest was started in, as a path from the rootdir. Node
    ids are relative to the rootdir and pytest shows each relative to the starting directory, so a plain
    `loopbench` would read `../loopbench::...` wherever the two differ (started in a subdirectory of the
    project, or with `--loopbench-scenarios ../mine`, which pytest counts among the paths that place the
    rootdir); this one reads `loopbench::...` there. Started outside the rootdir: `loopbench`."""
    try:
        return (config.invocation_params.dir / "loopbench").relative_to(config.rootpath).as_posix()
    except ValueError:
        return "loopbench"


def _top(items: list[str]) -> str:
    more = len(items) - TOP
    return "; ".join(items[:TOP]) + (f" (+{more} more)" if more > 0 else "")


def _reasons(record: Any, fail_on: Sequence[str], changes: list[tuple[str, Any, Any]]) -> list[str]:
    """Why an item fails, each reason with its top deviations or changes; none when it passes."""
    from loopbench.reports.formatting import deviation_text

    out: list[str] = []
    if failing(record, fail_on) is not None:  # `run --fail-on`'s decision (loopbench/fail_on.py)
        if record.outcome == "error":
            out.append(record.error_reason or "no reason recorded")
        else:
            deviations = [deviation_text(d) for d in record.deviations]
            out.append("fails --loopbench-fail-on deviation" + (f": {_top(deviations)}" if deviations else ""))
    elif record.outcome == "hung":  # the plugin's own rule, whatever --loopbench-fail-on
        out.append(f"the run hung: {record.error_reason or 'no reason recorded'}")
    if changes:
        out.append("behaves differently from the baseline: " + _top([_change(*c) for c in changes]))
    return out


def _change(what: str, was: Any, now: Any) -> str:
    """One change against the baseline, `what: was → now`. The deviations' change is both lists, then what is new
    and gone in them (`none → tool_executions (new: tool_executions)`, as `loopbench diff`'s cell): the two
    lists alone say it, each name once."""
    if what == "deviations":
        now = str(now).partition(" (new: ")[0].partition(" (gone: ")[0]
    return f"{what}: {was} → {now}"


class _Controller:
    """Runs the selected items' cells in one background suite run and hands each item its record."""

    def __init__(self, config: pytest.Config, items: list[LoopbenchItem]):
        self.config = config
        self.items = items
        self.records: dict[tuple[str, str, str], Any] = {}
        self.done = threading.Condition()
        self.failure: BaseException | None = None
        self.finished = False
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.out = Path(config.getoption("loopbench_out") or tempfile.mkdtemp(prefix="loopbench-pytest-"))
        self.fail_on = fail_on_kinds(config.getoption("loopbench_fail_on"))
        baseline = config.getoption("loopbench_baseline")
        self.baseline: dict[tuple[str, str, str], Any] | None = None
        if baseline:
            from loopbench.reports.cells import cells
            from loopbench.reports.load import load_records

            self.baseline = {c.key: c for c in cells(load_records(baseline))}

    def start(self) -> None:
        from loopbench.harness.run.runner import RunPlan

        wanted = [i for i in self.items if not i.unavailable]
        scenarios = list({i.scenario.id: i.scenario for i in wanted}.values())
        variants = list(dict.fromkeys((i.framework, i.variant) for i in wanted))
        jobs = self.config.getoption("loopbench_jobs")
        cores = os.cpu_count() or 1
        plan = RunPlan(scenarios=scenarios, variants=variants, jobs=jobs or cores,
                       max_jobs=None if jobs else cores + 1, out_dir=self.out, show_progress=False,
                       on_record=self._recorded, stop=self.stop, only={i.key for i in wanted})
        self.thread = threading.Thread(target=self._run, args=(plan,), name="loopbench-runner", daemon=True)
        self.thread.start()

    def _run(self, plan: Any) -> None:
        from loopbench.harness.run.runner import run_suite

        try:
            summary = run_suite(plan)
            if summary.unwritable:
                raise RuntimeError(summary.unwritable)
        except BaseException as exc:  # handed to every item still waiting
            self.failure = exc
        finally:
            with self.done:
                self.finished = True
                self.done.notify_all()

    def _recorded(self, record: Any) -> None:
        with self.done:
            self.records[(record.scenario, record.framework, record.variant)] = record
            self.done.notify_all()

    def record_of(self, item: LoopbenchItem) -> Any:
        if self.thread is None:
            self.start()
        with self.done:
            self.done.wait_for(lambda: item.key in self.records or self.finished, timeout=WAIT_S)
            if item.key in self.records:
                return self.records[item.key]
        if self.failure is not None:
            raise RuntimeError(f"the loopbench runner failed: {self.failure}") from self.failure
        pytest.fail(f"{item.name}: the runner ended without a record for this cell", pytrace=False)

    def changes_against_baseline(self, record: Any) -> list[tuple[str, Any, Any]]:
        if self.baseline is None:
            return []
        from loopbench.reports.cells import cells
        from loopbench.reports.diff import compare_cells

        key = (record.scenario, record.framework, record.variant)
        if key not in self.baseline:  # a cell the baseline never ran: coverage, not a change
            return []
        (mine,) = cells([record])
        return compare_cells(self.baseline[key], mine)

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=120)


@pytest.hookimpl(tryfirst=True)  # before pytest-asyncio's own pytest_configure reads its setting
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "loopbench: a loopbench scenario × framework variant item")
    if config.getoption("loopbench"):
        _settle_asyncio_loop_scope(config)


ASYNCIO_SCOPE = "asyncio_default_fixture_loop_scope"


def _settle_asyncio_loop_scope(config: pytest.Config) -> None:
    """pytest-asyncio (installed with loopbench's dev extra) opens every session whose configuration does not
    set `asyncio_default_fixture_loop_scope` with a PytestDeprecationWarning about the option's future default;
    `pytest --loopbench` usually runs where no configuration file does (a CI job's directory, a temporary one).
    Unset, the option means `fixture-scope` (each async fixture's loop scope is its own scope): this says so
    explicitly, from pytest-asyncio 1.5 on, which is where that value exists, so the session behaves exactly as
    it would unset. The loopbench items use no event loop of pytest's; a value set in the configuration or
    with `-o` is kept."""
    try:
        if config.getini(ASYNCIO_SCOPE):
            return
    except ValueError:  # pytest-asyncio is not installed (or not loaded: -p no:asyncio)
        return
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        if Version(version("pytest-asyncio")) < Version("1.5"):
            return
    except PackageNotFoundError:
        return
    cache = getattr(config, "_inicache", None)  # getini's cache (pytest 8 and 9): no public setter exists
    if isinstance(cache, dict):
        cache[ASYNCIO_SCOPE] = "fixture-scope"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the scenario × framework variant items first, so -k and -m select among them as among any."""
    if not config.getoption("loopbench"):
        return
    from loopbench.harness.adapter import describe_frameworks, resolve_selection
    from loopbench.harness.errors import BadInput
    from loopbench.harness.record import column_of
    from loopbench.harness.run.ideal import refuse_script_bugs
    from loopbench.harness.scenario import expand_paths, load_scenarios
    from loopbench.reports.claims import known_claim_ids

    try:
        paths = [Path(p) for p in config.getoption("loopbench_scenarios")]
        # the dry run `loopbench run` does: a script bug is refused before anything runs
        scenarios = refuse_script_bugs(load_scenarios(expand_paths(paths) if paths else None,
                                                      claim_ids=known_claim_ids()))
        selection = resolve_selection(config.getoption("loopbench_framework"))
    except BadInput as exc:
        raise pytest.UsageError(f"loopbench: {exc}") from None
    info = {f.id: f for f in describe_frameworks()}
    suite = LoopbenchSuite.from_parent(session, name="loopbench", nodeid=suite_nodeid(config))
    mine = [LoopbenchItem.from_parent(suite, name=f"{sc.id}[{column_of(framework, variant)}]", scenario=sc,
                                      framework=framework, variant=variant, unavailable=info[framework].unavailable)
            for framework, variant in selection for sc in scenarios]
    # reported as a collection, so pytest's "collected N items" counts them
    collected: list[pytest.Item | pytest.Collector] = list(mine)
    config.hook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, collected))
    items.extend(mine)


def pytest_collection_finish(session: pytest.Session) -> None:
    mine = [i for i in session.items if isinstance(i, LoopbenchItem)]
    if mine:
        session.config.stash[KEY] = _Controller(session.config, mine)


def pytest_sessionfinish(session: pytest.Session) -> None:
    controller = session.config.stash.get(KEY, None)
    if controller is not None:
        controller.close()


def _is_mine(report: pytest.TestReport) -> bool:
    return report.when == "call" and "::" in report.nodeid and \
        report.nodeid.rpartition("::")[0].rpartition("/")[2] == "loopbench"


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config
                             ) -> tuple[str, str, tuple[str, dict[str, bool]]] | None:
    """A loopbench item's run in `-v`: `PASSED completed (conforms)`, `FAILED incomplete (deviates)`. Once a
    failed item's line is written, its word is plain `FAILED` again: the short summary line has its failure
    text, which starts with the outcome and verdict, and no room to spare."""
    props = dict(report.user_properties) if _is_mine(report) else {}
    if "verdict" not in props or report.outcome not in ("passed", "failed"):
        return None
    if report.failed and getattr(report, "_loopbench_logged", False):
        return "failed", "F", ("FAILED", {"red": True})
    word = f"{report.outcome.upper()} {props['outcome']} ({props['verdict']})"
    if report.failed:
        return "failed", "F", (word, {"red": True})
    return "passed", ".", (word, {"green": True} if props["verdict"] == "conforms" else {"yellow": True})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> Any:
    try:
        return (yield)
    finally:
        if _is_mine(report):
            report._loopbench_logged = True  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    controller = config.stash.get(KEY, None)
    if controller is not None and controller.thread is not None:
        terminalreporter.write_line(f"loopbench results: {controller.out} (`loopbench report {controller.out}`)")
