"""The whole suite through the real runner, run once per test session and shared by the adapter tests and the
published-results check (every framework, every variant, every scenario).

The same run also runs the tests' own scenarios that need every variant (EXTRA_SCENARIOS: the tool_choice cases,
a script bug), in the same warm workers: a runner of their own would start every framework again. Their records
are kept apart (`extra_records()`), so the suite's results are the built-in suite's only."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from loopbench.harness.adapter import adapter_class, resolve_selection
from loopbench.harness.record import RunRecord
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import Scenario, expand_paths, load_scenarios

# the slots `loopbench run` picks by default (a compute slot per core; the slow runs get waiting slots of their
# own), so the published cells are checked under the schedule users get
SUITE_JOBS = os.cpu_count() or 1


_ran: list[tuple[tuple[str, ...] | None, Path]] = []  # (frameworks, results dir): this session's suite run

DATA = Path(__file__).resolve().parent / "data"
EXTRAS = "extras"  # the extra scenarios' results: a directory inside the suite's


def extra_scenarios() -> list[Scenario]:
    """The tests' own scenarios run beside the suite on every variant: the tool_choice cases (tests/
    test_tool_choice.py) and the script bug only a run finds (tests/test_script_error.py)."""
    bug = [s for s in load_scenarios(expand_paths([DATA / "script_bug"])) if s.id == "ticket_answer_bug"]
    return load_scenarios(expand_paths([DATA / "tool_choice"])) + bug


def claim_the_suite_run(run_uid: str | None, worker: str | None) -> None:
    """Under pytest-xdist every suite test runs on one worker (tests/conftest.py groups them), so the suite runs
    once per session. A second worker that comes to run it means the grouping broke (pytest 9.2 broke xdist
    3.8's loadgroup silently: pytest-xdist #1386): said so, not paid for twice. `run_uid` is the session's
    PYTEST_XDIST_TESTRUNUID, shared by its workers; without xdist there is nothing to claim."""
    if not run_uid:
        return
    claim = Path(tempfile.gettempdir()) / f"loopbench-suite-run-{run_uid}"
    try:
        with claim.open("x") as f:
            f.write(worker or "")
    except FileExistsError:
        raise AssertionError(f"the shared suite run was started on pytest worker {claim.read_text() or '?'} "
                             f"and again on {worker}: the suite tests are not on one worker (xdist's loadgroup "
                             f"grouping, tests/conftest.py)") from None


def full_suite(frameworks: tuple[str, ...] | None = None) -> Path:
    """Run the suite once per session (every available variant of `frameworks`, every framework when None); the
    results directory. A later call needing frameworks the run left out is a wrong test selection, said so."""
    if _ran:
        ran, out = _ran[0]
        if ran is not None and (frameworks is None or not set(frameworks) <= set(ran)):
            raise AssertionError(f"the session's suite run covers {ran}, not {frameworks or 'every framework'}")
        return out
    claim_the_suite_run(os.environ.get("PYTEST_XDIST_TESTRUNUID"), os.environ.get("PYTEST_XDIST_WORKER"))
    out = Path(tempfile.mkdtemp(prefix="loopbench-suite-"))
    variants = [(f, v) for f, v in resolve_selection(list(frameworks or ())) if
                adapter_class(f).unavailable_reason() is None]
    extras = extra_scenarios()
    run_suite(RunPlan(scenarios=load_scenarios() + extras, variants=variants, jobs=SUITE_JOBS, out_dir=out,
                      show_progress=False))
    _set_apart({s.id for s in extras}, out)
    _ran.append((frameworks, out))
    return out


def _set_apart(extra_ids: set[str], out: Path) -> None:
    """Move the extra scenarios' records from `out/results.jsonl` to `out/extras/results.jsonl`."""
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    is_extra = [json.loads(x)["scenario"] in extra_ids for x in lines]
    (out / EXTRAS).mkdir()
    (out / EXTRAS / "results.jsonl").write_text("".join(x for x, e in zip(lines, is_extra, strict=True) if e))
    (out / "results.jsonl").write_text("".join(x for x, e in zip(lines, is_extra, strict=True) if not e))


def suite_dir() -> Path:
    """This session's suite run (every framework's, when none ran yet)."""
    return _ran[0][1] if _ran else full_suite()


def suite_records() -> list[RunRecord]:
    lines = (suite_dir() / "results.jsonl").read_text().splitlines()
    return [RunRecord.model_validate(json.loads(line)) for line in lines]


def extra_records() -> list[RunRecord]:
    """The extra scenarios' records of this session's suite run (every variant it ran)."""
    lines = (suite_dir() / EXTRAS / "results.jsonl").read_text().splitlines()
    return [RunRecord.model_validate(json.loads(line)) for line in lines]


def run_framework(framework: str) -> dict[tuple[str, str], RunRecord]:
    """The shared suite's records of one framework, by (scenario, variant)."""
    return {(r.scenario, r.variant): r for r in suite_records() if r.framework == framework}
