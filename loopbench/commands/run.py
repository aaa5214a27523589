"""`loopbench run`: the suite (or a selection of it) through the frameworks' loops and your own (`--loop-cmd`),
the records in DIR/results.jsonl, then the reports; the exit code is `exit_policy`'s."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from loopbench.commands import exit_policy
from loopbench.commands.common import err, load_suite, out, say_open, select, write_reports
from loopbench.fail_on import fail_on_kinds
from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.record import FailOn

if TYPE_CHECKING:
    from loopbench.harness.run.runner import SuiteSummary


def run(*, framework: list[str] | None, scenario: list[str] | None, scenarios_from: list[Path] | None, quick: bool,
        jobs: int | None, repeat: int, out_dir: Path | None, resume_partial: bool, force: bool,
        loop_cmd: str | None, loop_name: str, hard_margin: float | None, junit: Path | None,
        fail_on: list[FailOn] | None, shard: str | None = None) -> int:
    """Run the selection and write the reports; the exit code (exit_policy). BadInput before anything runs."""
    from loopbench.harness.adapter import describe_frameworks, resolve_selection
    from loopbench.harness.results.history import latest_results, new_results_dir, refuse_existing
    from loopbench.harness.results.shard import Shard

    kinds = fail_on_kinds(fail_on)  # bad input before anything runs
    share = Shard.parse(shard) if shard is not None else None
    on_first_record = None
    chosen_frameworks = list(framework or [])
    scenarios = select(load_suite(scenarios_from), scenario or [])
    slow = 0
    if quick:
        slow = sum("slow" in s.tags for s in scenarios)
        scenarios = [s for s in scenarios if "slow" not in s.tags]
    if loop_cmd is not None:
        register_loop(loop_cmd, loop_name)
        # the loop always runs: alone, or next to the frameworks -f names
        if not any(f.partition(":")[0] == loop_name for f in framework or []):
            framework = [*(framework or []), loop_name]
    selection = resolve_selection(framework or [])
    if out_dir is None and resume_partial:
        out_dir = latest_results().resolve()
    elif out_dir is None:
        out_dir = new_results_dir()
        on_first_record = pointer_mover(out_dir)
    else:
        refuse_existing(out_dir, force=force, resume=resume_partial)
    info = {f.id: f for f in describe_frameworks()}
    runnable = [(f, v) for f, v in selection if info[f].unavailable is None]
    unavailable = sorted({f for f, _ in selection if info[f].unavailable is not None})
    if runnable:  # the first line: what runs, and why these
        why = selection_why(scenarios_from, scenario or [], slow, chosen_frameworks, loop_cmd, loop_name,
                            unavailable, variants={f: list(i.variants) for f, i in info.items()})
        out.print(f"{count(len(scenarios), 'scenario')} × {count(len(runnable), 'framework variant')}"
                  + (f" × {repeat} repetitions" if repeat > 1 else "")
                  + f" = {count(len(scenarios) * len(runnable) * repeat, 'run')} ({why})"
                  + (f"; shard {share} of them" if share else ""), markup=False, highlight=False, soft_wrap=True)
    for f in unavailable:
        err.print(f"[yellow]skipping {f}[/yellow]: {info[f].unavailable}")
    if not runnable:
        out.print("no adapter is available yet: nothing to run")
        return exit_policy.OK
    from loopbench.harness.run.runner import RunPlan, run_suite, shard_line

    cores = os.cpu_count() or 1
    # an explicit --jobs is exact; by default the runner starts a slot per core and opens one more while the
    # runs wait rather than compute (harness/run/schedule.py: why not more)
    plan = RunPlan(scenarios=scenarios, variants=runnable, repeat=repeat, jobs=jobs or cores,
                   max_jobs=None if jobs else cores + 1, out_dir=out_dir, resume_partial=resume_partial,
                   on_first_record=on_first_record, shard=share)
    if hard_margin is not None:
        plan.hard_margin_s = hard_margin
    if share is not None:
        out.print(shard_line(plan), markup=False, highlight=False, soft_wrap=True)
    summary = run_suite(plan)
    for warning in summary.warnings:
        err.print(f"[yellow]warning[/yellow] {warning}")
    out.print(f"{summary.records} run(s) recorded in {summary.results_file}"
              + (f" ({summary.skipped} already there)" if summary.skipped else ""), markup=False, soft_wrap=True)
    if summary.unwritable:
        err.print(f"[red]error[/red] {summary.unwritable}. The {summary.records} run(s) recorded before it are "
                  f"complete; make room, then `loopbench run --out {out_dir} --continue` runs the rest (no reports "
                  "were written)", highlight=False, soft_wrap=True)
        return exit_policy.UNWRITABLE
    recorded = bool(summary.results_file and summary.results_file.exists() and summary.results_file.stat().st_size)
    written: list[Path] = []
    if summary.interrupted:  # the user asked to stop: stop now; the reports are one command away
        err.print(f"interrupted ({summary.interrupted}): finished runs are kept; `loopbench report {out_dir}` writes "
                  f"their reports, `loopbench run --out {out_dir} --continue` runs the rest", markup=False,
                  highlight=False, soft_wrap=True)
        return exit_policy.interrupted(summary.interrupted)
    if recorded:
        out.print("writing the reports (report.md, report.html, matrix.csv, summary.json, pictures)")
        written = write_reports(out_dir, "md,html,csv,json")
    code = _exit_code(summary, out_dir, kinds=kinds, junit=junit, recorded=recorded)
    say_open(written)  # the last line, whatever the exit code: the file to open
    return code


def _exit_code(summary: SuiteSummary, out_dir: Path, *, kinds: list[FailOn], junit: Path | None,
               recorded: bool) -> int:
    """The run's exit code once the reports are written (exit_policy), with the JUnit XML when asked."""
    if not exit_policy.needs_records(kinds, junit=junit is not None, recorded=recorded):
        return exit_policy.exit_code(bool(summary.errors))  # the default: this run's errors, no second read
    from loopbench.reports.junit import failing, run_junit, write
    from loopbench.reports.load import load_records

    records = load_records(out_dir)
    if junit is not None:
        write(run_junit(records, kinds), junit)
        out.print(f"JUnit XML: {junit}", markup=False, soft_wrap=True)
    failed = [r for r in records if failing(r, kinds)]
    if failed and "deviation" in kinds:
        err.print(f"{len(failed)} run(s) fail --fail-on {','.join(kinds)}", highlight=False)
    return exit_policy.exit_code(bool(failed))


def count(n: int, thing: str) -> str:
    """`1 scenario`, `27 scenarios`."""
    return f"{n} {thing}{'' if n == 1 else 's'}"


def selection_why(scenarios_from: list[Path] | None, globs: list[str], slow: int, frameworks: list[str],
                  loop_cmd: str | None, loop_name: str, unavailable: list[str],
                  variants: Mapping[str, Sequence[str]] | None = None) -> str:
    """Why these scenarios and variants run, for the run's first line: `the built-in suite, every available
    framework variant; 2 frameworks unavailable: ...` or `selected with -s ... from the built-in suite, selected
    with -f openai-agents (all 4 variants: default, ...) -f pydantic-ai:default`: a bare `-f F` is every variant
    of F, which `variants` (each framework's) names."""
    which = (f"the scenarios in {' '.join(shlex.quote(str(p)) for p in scenarios_from)}" if scenarios_from
             else "the built-in suite")
    if globs:
        which = f"selected with {' '.join(f'-s {shlex.quote(g)}' for g in globs)} from {which}"
    if slow:
        which += f" without the {count(slow, 'scenario')} tagged slow (--quick)"
    own = [f for f in frameworks if f.partition(":")[0] != loop_name] if loop_cmd is not None else frameworks
    if own:
        flags = (_flag(f, own, variants or {}) for f in dict.fromkeys(own))
        chosen = f"selected with {' '.join(filter(None, flags))}"
    elif loop_cmd is None:
        chosen = "every available framework variant"
    else:
        chosen = ""
    if loop_cmd is not None:
        chosen += f"{' and ' if chosen else ''}your loop (--loop-cmd) as {loop_name}"
    gone = f"; {count(len(unavailable), 'framework')} unavailable: {', '.join(unavailable)}" if unavailable else ""
    return f"{which}, {chosen}{gone}"


def _flag(selected: str, every: list[str], variants: Mapping[str, Sequence[str]]) -> str:
    """One `-f` as the first line echoes it: a bare framework with the variants it selects (`-f openai-agents
    (all 4 variants: default, ...)`), a framework:variant as given; nothing for a variant a bare -f already
    selects."""
    framework, _, variant = selected.partition(":")
    if variant and framework in every:
        return ""
    flag = f"-f {shlex.quote(selected)}"
    names = list(variants.get(framework, ()))
    if variant or not names:
        return flag
    return flag + (f" (its one variant: {names[0]})" if len(names) == 1
                   else f" (all {len(names)} variants: {', '.join(names)})")


def register_loop(command: str, name: str) -> None:
    """`--loop-cmd`: the loop-protocol adapter under `name` (each job names it to its worker; the command reaches
    the workers through the environment they inherit)."""
    from loopbench.adapters.loop_command import COMMAND_ENV
    from loopbench.harness.adapter import BUILTIN, register

    if not re.fullmatch(r"[a-z][a-z0-9-]{0,39}", name) or name in BUILTIN:
        raise BadInput([InputProblem("--loop-name", "", f"{name!r}: 1-40 lowercase letters, digits or -, starting "
                                     "with a letter, and not a built-in framework's id")])
    try:
        if not shlex.split(command):
            raise ValueError("it is empty")
    except ValueError as exc:
        raise BadInput([InputProblem("--loop-cmd", "", f"{command!r} cannot be split into a command: {exc}")]
                       ) from None
    os.environ[COMMAND_ENV] = command
    register(name, "loopbench.adapters.loop_command:LoopCommandAdapter")


def pointer_mover(target: Path) -> Callable[[], None]:
    """Once the first record is written: move results/latest to `target` (a warning if it cannot be moved)."""
    from loopbench.harness.results.history import point_latest

    def move() -> None:
        try:
            point_latest(target)
        except OSError as exc:  # the results are written either way; only the pointer is missing
            err.print(f"[yellow]warning[/yellow] results/latest not moved to {target}: {exc.strerror or exc}")

    return move
