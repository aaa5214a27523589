"""The pytest plugin (entry point `pytest11`: installing loopbench is enough). `pytest --loopbench` collects one
test item per scenario × framework variant, `approval_pause[langgraph:stategraph]` (`[langgraph]` for a default
variant), and runs the selected ones through the normal runner (warm workers, parallel slots) in the
background while pytest reports them in order. An item fails when its run is `error` or `hung`, and, with
`--loopbench-baseline DIR`, when its cell behaves differently from the baseline's (each change named, as
`loopbench diff` names it). `-k` selects items before anything runs; `-x` stops the runner after the first
failure (runs in flight are dropped).

    pytest --loopbench --loopbench-framework langgraph --loopbench-baseline reports/published
    pytest --loopbench --loopbench-scenarios my_scenarios/ -k approval -x
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

KEY = pytest.StashKey["_Controller"]()
WAIT_S = 3600.0  # the longest one item waits for its run (the runner's own hard timeouts are shorter)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("loopbench", "loopbench: the scenario suite as test items")
    g.addoption("--loopbench", action="store_true", help="collect one item per scenario × framework variant")
    g.addoption("--loopbench-framework", action="append", default=[], metavar="F[:V]",
                help="only this framework (every variant) or F:VARIANT (repeatable)")
    g.addoption("--loopbench-scenarios", action="append", default=[], metavar="PATH",
                help="your own scenario directory or file instead of the built-in suite (repeatable)")
    g.addoption("--loopbench-baseline", metavar="DIR", help="fail an item whose cell behaves differently here")
    g.addoption("--loopbench-out", metavar="DIR", help="keep the results here (default: a temporary directory)")
    g.addoption("--loopbench-jobs", type=int, metavar="N", help="runs computing at a time (default: a slot per core)")


class LoopbenchSuite(pytest.Collector):
    """The parent of every item (node ids `loopbench::<scenario>[<framework variant>]`)."""

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
        if record.outcome in ("error", "hung"):
            pytest.fail(f"{self.name}: {record.outcome}: {record.error_reason or 'no reason recorded'} "
                        f"(run {record.run_id}; `loopbench show {record.run_id} --results {controller.out}`)",
                        pytrace=False)
        changes = controller.changes_against_baseline(record)
        if changes:
            listed = "; ".join(f"{what}: {was} → {now}" for what, was, now in changes)
            pytest.fail(f"{self.name} behaves differently from the baseline: {listed} (run {record.run_id})",
                        pytrace=False)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return (self.scenario.source or "loopbench", None, self.name)


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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "loopbench: a loopbench scenario × framework variant item")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the scenario × framework variant items first, so -k and -m select among them as among any."""
    if not config.getoption("loopbench"):
        return
    from loopbench.harness.adapter import describe_frameworks, resolve_selection
    from loopbench.harness.errors import BadInput
    from loopbench.harness.record import column_of
    from loopbench.harness.scenario import expand_paths, load_scenarios
    from loopbench.reports.claims import known_claim_ids

    try:
        paths = [Path(p) for p in config.getoption("loopbench_scenarios")]
        scenarios = load_scenarios(expand_paths(paths) if paths else None, claim_ids=known_claim_ids())
        selection = resolve_selection(config.getoption("loopbench_framework"))
    except BadInput as exc:
        raise pytest.UsageError(f"loopbench: {exc}") from None
    info = {f.id: f for f in describe_frameworks()}
    suite = LoopbenchSuite.from_parent(session, name="loopbench", nodeid="loopbench")
    mine = [LoopbenchItem.from_parent(suite, name=f"{sc.id}[{column_of(framework, variant)}]", scenario=sc,
                                      framework=framework, variant=variant, unavailable=info[framework].unavailable)
            for framework, variant in selection for sc in scenarios]
    # reported as a collection, so pytest's "collected N items" counts them
    config.hook.pytest_collectreport(report=pytest.CollectReport(suite.nodeid, "passed", None, mine))
    items.extend(mine)


def pytest_collection_finish(session: pytest.Session) -> None:
    mine = [i for i in session.items if isinstance(i, LoopbenchItem)]
    if mine:
        session.config.stash[KEY] = _Controller(session.config, mine)


def pytest_sessionfinish(session: pytest.Session) -> None:
    controller = session.config.stash.get(KEY, None)
    if controller is not None:
        controller.close()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    controller = config.stash.get(KEY, None)
    if controller is not None and controller.thread is not None:
        terminalreporter.write_line(f"loopbench results: {controller.out} (`loopbench report {controller.out}`)")
