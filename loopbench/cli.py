"""The `loopbench` command line: the only place that composes the harness and the reports.

Exit codes: 0 every run produced a record (deviations are findings, not failures); 1 a run ended in
`error`; 2 bad input (refused before anything runs); 3 the output could not be written (a full disk): what was
written is complete and `--continue` runs the rest.
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from loopbench.harness.errors import BadInput, InputProblem
from loopbench.harness.scenario import Scenario, load_scenarios
from loopbench.reports.claims import known_claim_ids

app = typer.Typer(add_completion=False, no_args_is_help=True, help="How does my agent framework's loop really stop?")
out = Console()
err = Console(stderr=True)


def _fail(exc: BadInput) -> typer.Exit:
    for problem in exc.problems:
        err.print(f"[red]error[/red] {str(problem).lstrip(': ')}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


class RunFailOn(StrEnum):
    error = "error"  # a run loopbench itself could not carry out (outcome error)
    deviation = "deviation"  # any verdict but conforms


class DiffFailOn(StrEnum):
    change = "change"  # a cell on both sides behaves differently
    deviation = "deviation"
    error = "error"


class DiffFormat(StrEnum):
    md = "md"
    json = "json"


ScenarioPaths = Annotated[list[Path] | None, typer.Option(
    "--scenarios", help="a scenario directory or file of your own, instead of the built-in suite (repeatable); a "
    "directory's _suite.yaml with `extends: builtin` uses the built-in tool catalogue and defaults")]


def _load(paths: list[Path] | None) -> list[Scenario]:
    from loopbench.harness.scenario import expand_paths

    claims = known_claim_ids()
    return load_scenarios(expand_paths(paths) if paths else None, claim_ids=claims)


def _select(scenarios: list[Scenario], globs: list[str]) -> list[Scenario]:
    if not globs:
        return scenarios
    chosen = [s for s in scenarios if any(fnmatch.fnmatchcase(s.id, g) for g in globs)]
    unmatched = [g for g in globs if not any(fnmatch.fnmatchcase(s.id, g) for s in scenarios)]
    if unmatched:
        raise BadInput(f"--scenario {' '.join(unmatched)}: matches no scenario (see `loopbench list`)")
    return chosen


@app.command("list")
def list_(as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
          scenarios_from: ScenarioPaths = None) -> None:
    """The scenarios (category, claims) and the frameworks with their variants and versions.

    Example: `loopbench list --scenarios my_scenarios/`"""
    from loopbench.harness.adapter import REFUSED, describe_frameworks

    for refused in REFUSED:
        err.print(f"[yellow]warning[/yellow] adapter not registered: {refused}", highlight=False, soft_wrap=True)
    try:
        scenarios = _load(scenarios_from)
    except BadInput as exc:
        raise _fail(exc) from None
    from loopbench.reports.claims import load_claims

    frameworks = describe_frameworks()
    used = {c for s in scenarios for c in s.claims}
    claims = [c for c in load_claims() if c.id in used]
    if as_json:
        print(json.dumps({
            "scenarios": [{"id": s.id, "title": s.title, "category": s.category, "claims": s.claims}
                          for s in scenarios],
            "claims": [{"id": c.id, "framework": c.framework, "text": c.text} for c in claims],
            "frameworks": [{"id": f.id, "variants": list(f.variants), "about": f.variants, "version": f.version,
                            "available": f.unavailable is None, "unavailable": f.unavailable,
                            "capabilities": f.capabilities.model_dump(mode="json") if f.capabilities else None}
                           for f in frameworks],
        }, indent=2))
        return
    table = Table(title=f"{len(scenarios)} scenarios")
    for col in ("id", "category", "claims", "title"):
        table.add_column(col)
    for s in scenarios:
        table.add_row(s.id, s.category, " ".join(s.claims), s.title)
    out.print(table)
    ftable = Table(title="frameworks")
    for col in ("id", "variants", "version", "status"):
        ftable.add_column(col)
    for f in frameworks:
        ftable.add_row(f.id, ", ".join(f.variants), f.version or "-", f.unavailable or "available")
    out.print(ftable)
    vtable = Table(title="variants (what each idiom is, as its adapter declares it)")
    for col in ("framework:variant", "what it is"):
        vtable.add_column(col)
    for f in frameworks:
        for variant, about in f.variants.items():
            vtable.add_row(f"{f.id}:{variant}", about)
    out.print(vtable)
    if claims:
        cltable = Table(title="documented claims the scenarios check (reports/claims.yaml)")
        for col in ("id", "framework", "claim"):
            cltable.add_column(col)
        for c in claims:
            cltable.add_row(c.id, c.framework, c.text)
        out.print(cltable)
    ctable = Table(title="capabilities (declared by each adapter)")
    for col in ("id", "native limits", "step unit", "pause", "deny"):
        ctable.add_column(col)
    for f in frameworks:
        if (c := f.capabilities) is not None:
            pause = f"{c.pause}, {'survives' if c.pause_survives_restart else 'does not survive'} a restart"
            ctable.add_row(f.id, ", ".join(sorted(c.native_limits)) or "none", c.step_unit, pause, c.deny)
    out.print(ctable)


@app.command()
def validate(
    files: Annotated[list[Path] | None, typer.Argument(help="scenario files (default: the suite)")] = None,
    scenarios_from: ScenarioPaths = None,
) -> None:
    """Check scenario files; report every problem found (exit 2) or confirm them (exit 0).

    Example: `loopbench validate --scenarios my_scenarios/` (a file's defaults come from the _suite.yaml beside
    it)"""
    try:
        scenarios = load_scenarios(files, claim_ids=known_claim_ids()) if files else _load(scenarios_from)
    except BadInput as exc:
        raise _fail(exc) from None
    from loopbench.harness.scenario import SUITE_DEFAULTS_FILE

    for directory in sorted({Path(s.source).resolve().parent for s in scenarios}):
        if not (directory / SUITE_DEFAULTS_FILE).exists():  # not an error, but easy to miss: say it
            err.print(f"[yellow]note[/yellow] {directory}: no {SUITE_DEFAULTS_FILE} here, so no suite defaults "
                      "(limits, model, tool catalogue) apply to its files; `extends: builtin` in one would add "
                      "the built-in ones", highlight=False, soft_wrap=True)
    out.print(f"{len(scenarios)} scenario(s) valid")


@app.command()
def run(
    framework: Annotated[
        list[str] | None, typer.Option("--framework", "-f", help="F (every variant) or F:VARIANT")
    ] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", "-s", help="scenario id glob")] = None,
    scenarios_from: ScenarioPaths = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="leave out the scenarios tagged slow (retry storms that wait for minutes)")] = False,
    # bounds: each slot is two warm worker processes (~120-250 MB each); a repetition is a whole suite run
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, max=32,
                                             help="runs computing at a time, exactly, 1-32 (default: a slot per core, "
                                                  "up to one more while runs wait)")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, max=100, help="repetitions of each run, 1-100")] = 1,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", help="output directory (default: a new results/<UTC time>/; results/latest then points to it)")
    ] = None,
    resume_partial: Annotated[bool, typer.Option(
        "--continue", help="keep DIR/results.jsonl and run only what is missing (default DIR: results/latest)")
    ] = False,
    force: Annotated[bool, typer.Option(
        "--force", help="replace the results an existing --out holds (kept as results.previous.jsonl)")] = False,
    loop_cmd: Annotated[str | None, typer.Option(
        "--loop-cmd", help="your own loop, any language, run per run through the loop protocol "
        "(docs/loop-protocol.md); alone, only it runs (add -f to compare)")] = None,
    loop_name: Annotated[str, typer.Option(
        "--loop-name", help="the column name of --loop-cmd in the reports")] = "my-loop",
    hard_margin: Annotated[float | None, typer.Option(
        "--hard-margin", min=1.0, max=3600.0,
        help="seconds past a run's scripted time before it is hung, 1-3600 (default 60)")
    ] = None,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="also write JUnit XML: a testcase per cell, failed by --fail-on")] = None,
    fail_on: Annotated[list[RunFailOn] | None, typer.Option(
        "--fail-on", help="exit 1 when a run is an error (default) or, with deviation, any verdict but conforms "
                          "(repeatable)")] = None,
) -> None:
    """Run the suite: DIR/results.jsonl (one RunRecord per line, appended as each run finishes) and DIR/traces/.

    Each run without --out writes a new results/<UTC time>/ and moves results/latest to it once it has a
    record; earlier results stay where they are. Examples:

      loopbench run                                  # everything; then `loopbench report`, `loopbench diff BASE`
      loopbench run -f langgraph -s 'approval_*'     # one framework, a glob of scenarios
      loopbench run --continue                       # finish an interrupted run in results/latest
      loopbench run --scenarios my_scenarios/        # your own scenario files instead of the built-in suite
      loopbench run --loop-cmd 'python my_loop.py'   # your own loop through the suite (docs/loop-protocol.md)
      loopbench run --junit junit.xml --fail-on deviation   # in CI: a testcase per cell, fail on any deviation
    """
    from loopbench.harness.adapter import describe_frameworks, resolve_selection
    from loopbench.harness.results.history import latest_results, new_results_dir, refuse_existing

    on_first_record = None
    try:
        scenarios = _select(_load(scenarios_from), scenario or [])
        if quick:
            scenarios = [s for s in scenarios if "slow" not in s.tags]
        if loop_cmd is not None:
            _register_loop(loop_cmd, loop_name)
            # the loop always runs: alone, or next to the frameworks -f names
            if not any(f.partition(":")[0] == loop_name for f in framework or []):
                framework = [*(framework or []), loop_name]
        selection = resolve_selection(framework or [])
        if out_dir is None and resume_partial:
            out_dir = latest_results().resolve()
        elif out_dir is None:
            out_dir = new_results_dir()
            on_first_record = _pointer_mover(out_dir)
        else:
            refuse_existing(out_dir, force=force, resume=resume_partial)
    except BadInput as exc:
        raise _fail(exc) from None
    info = {f.id: f for f in describe_frameworks()}
    runnable = [(f, v) for f, v in selection if info[f].unavailable is None]
    for f in sorted({f for f, _ in selection if info[f].unavailable is not None}):
        err.print(f"[yellow]skipping {f}[/yellow]: {info[f].unavailable}")
    if not runnable:
        out.print("no adapter is available yet: nothing to run")
        raise typer.Exit(0)
    from loopbench.harness.run.runner import RunPlan, run_suite

    try:
        cores = os.cpu_count() or 1
        # an explicit --jobs is exact; by default the runner starts a slot per core and opens one more while the
        # runs wait rather than compute (harness/run/schedule.py: why not more)
        plan = RunPlan(scenarios=scenarios, variants=runnable, repeat=repeat, jobs=jobs or cores,
                       max_jobs=None if jobs else cores + 1, out_dir=out_dir, resume_partial=resume_partial,
                       on_first_record=on_first_record)
        if hard_margin is not None:
            plan.hard_margin_s = hard_margin
        summary = run_suite(plan)
    except BadInput as exc:
        raise _fail(exc) from None
    for warning in summary.warnings:
        err.print(f"[yellow]warning[/yellow] {warning}")
    out.print(f"{summary.records} run(s) recorded in {summary.results_file}"
              + (f" ({summary.skipped} already there)" if summary.skipped else ""))
    if summary.unwritable:
        err.print(f"[red]error[/red] {summary.unwritable}. The {summary.records} run(s) recorded before it are "
                  f"complete; make room, then `loopbench run --out {out_dir} --continue` runs the rest (no reports "
                  "were written)", highlight=False, soft_wrap=True)
        raise typer.Exit(3)
    if summary.results_file and summary.results_file.exists() and summary.results_file.stat().st_size:
        out.print("writing the reports (report.md, report.html, matrix.csv, summary.json, pictures)")
        _write_reports(out_dir, "md,html,csv,json")
    if summary.interrupted:
        err.print(f"interrupted ({summary.interrupted}): finished runs are kept; `--continue` runs the rest")
        raise typer.Exit(143 if summary.interrupted == "SIGTERM" else 130)
    kinds = [k.value for k in fail_on or [RunFailOn.error]]
    empty = not (summary.results_file and summary.results_file.exists() and summary.results_file.stat().st_size)
    if empty or (junit is None and kinds == ["error"]):  # the default: this run's errors, no second read
        raise typer.Exit(1 if summary.errors else 0)
    from loopbench.reports.junit import failing, run_junit, write
    from loopbench.reports.load import load_records

    records = load_records(out_dir)
    if junit is not None:
        write(run_junit(records, kinds), junit)
        out.print(f"JUnit XML: {junit}")
    failed = [r for r in records if failing(r, kinds)]  # type: ignore[arg-type]
    if failed and "deviation" in kinds:
        err.print(f"{len(failed)} run(s) fail --fail-on {','.join(kinds)}", highlight=False)
    raise typer.Exit(1 if failed else 0)


@contextmanager
def _warnings_printed() -> Iterator[None]:
    """Warnings about the inputs (a torn last line skipped) as `warning ...` lines, not Python's format."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                err.print(f"[yellow]warning[/yellow] {w.message}", highlight=False, soft_wrap=True)


def _register_loop(command: str, name: str) -> None:
    """`--loop-cmd`: the loop-protocol adapter under `name`, here and in the workers (through the environment
    they inherit)."""
    import re
    import shlex

    from loopbench.adapters.loop_command import COMMAND_ENV
    from loopbench.harness.adapter import BUILTIN, register_for_workers

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
    register_for_workers(name, "loopbench.adapters.loop_command:LoopCommandAdapter")


def _pointer_mover(target: Path) -> Callable[[], None]:
    from loopbench.harness.results.history import point_latest

    def move() -> None:
        try:
            point_latest(target)
        except OSError as exc:  # the results are written either way; only the pointer is missing
            err.print(f"[yellow]warning[/yellow] results/latest not moved to {target}: {exc.strerror or exc}")

    return move


def _results_or_latest(results: Path | None) -> Path:
    from loopbench.harness.results.history import latest_results

    return results if results is not None else latest_results()


def _write_reports(results: Path, formats: str, baseline: Path | None = None) -> None:
    from loopbench.reports.build import build_reports

    with _warnings_printed():
        try:
            paths = build_reports(results, {f.strip() for f in formats.split(",") if f.strip()}, baseline=baseline)
        except OSError as exc:  # a full disk while writing a report: the results themselves are intact
            err.print(f"[red]error[/red] {exc.filename or results}: cannot write the reports: {exc.strerror or exc}; "
                      f"the results are intact: `loopbench report {results}` once there is room",
                      highlight=False, soft_wrap=True)
            raise typer.Exit(3) from None
    out.print("reports written:")
    for path in paths:
        out.print(f"  {path}")


@app.command()
def report(
    results: Annotated[Path | None, typer.Argument(
        help="a results directory or results.jsonl (default: results/latest)")] = None,
    formats: Annotated[str, typer.Option("--format", help="comma-separated: md,html,csv,json")] = "md,html,csv,json",
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="results to compare with: changed cells marked and explained (was → now)")] = None,
) -> None:
    """Build the comparison reports (report.md, report.html, matrix.csv, summary.json) from RunRecords.

    Example: `loopbench report` (the latest results), `loopbench report results/2026-12-02T01-30-00Z`, or after
    an SDK upgrade `loopbench report --baseline reports/published`"""
    try:
        _write_reports(_results_or_latest(results), formats, baseline)
    except BadInput as exc:
        raise _fail(exc) from None


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="a run id (or a unique prefix)")],
    results: Annotated[Path | None, typer.Option(
        "--results", "--out", help="results directory (default: results/latest)")] = None,
) -> None:
    """Print one run's record, trace and request log readably.

    Example: `loopbench show approval_pause-langgraph` (a unique prefix of a run id in the latest results)"""
    from loopbench.reports.show import show_run

    try:
        with _warnings_printed():
            print(show_run(_results_or_latest(results), run_id, color=out.is_terminal, width=out.width))
    except BadInput as exc:
        raise _fail(exc) from None


@app.command()
def diff(
    base: Annotated[Path, typer.Argument(help="baseline results (file or directory)")],
    new: Annotated[Path | None, typer.Argument(
        help="new results (file or directory; default: results/latest)")] = None,
    html_file: Annotated[Path | None, typer.Option(
        "--html", help="also write NEW's HTML report with the changed cells marked, to this file")] = None,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="also write JUnit XML: a testcase per common cell, failed when it changed")] = None,
    output: Annotated[DiffFormat, typer.Option(
        "--format", help="md (a table) or json (docs/diff.schema.json)")] = DiffFormat.md,
    framework: Annotated[list[str] | None, typer.Option(
        "--framework", "-f", help="compare only F or F:VARIANT (repeatable)")] = None,
    fail_on: Annotated[list[DiffFailOn] | None, typer.Option(
        "--fail-on", help="exit 1 on change (default), and/or on deviation or error in NEW (repeatable)")] = None,
) -> None:
    """Behaviour changes between two result sets (exit 0 unchanged, 1 changed, 2 bad input).

    Example, after an SDK upgrade: `make run && loopbench diff reports/published --html changes.html`; in CI,
    `loopbench diff reports/published results/ci -f langgraph --junit diff.xml --format json > diff.json`"""
    from loopbench.reports.diff import compare_results, diff_markdown

    try:
        with _warnings_printed():
            newer = _results_or_latest(new)
            d = compare_results(base, newer, framework)
            if html_file is not None:
                from loopbench.reports.build import html_against

                html_file.write_text(html_against(newer, base), encoding="utf-8")
            kinds = [k.value for k in fail_on or [DiffFailOn.change]]
            failed = d.changed if "change" in kinds else False
            if {"error", "deviation"} & set(kinds):
                from loopbench.reports.junit import failing
                from loopbench.reports.load import load_records

                mine = [r for r in load_records(newer) if not framework
                        or any(sel in (r.framework, f"{r.framework}:{r.variant}") for sel in framework)]
                failed = failed or any(failing(r, kinds) for r in mine)  # type: ignore[arg-type]
    except BadInput as exc:
        raise _fail(exc) from None
    print(d.model_dump_json(indent=2) if output is DiffFormat.json else diff_markdown(d))
    if junit is not None:
        from loopbench.reports.junit import diff_junit, write

        write(diff_junit(d), junit)
        err.print(f"JUnit XML: {junit}", highlight=False, soft_wrap=True)
    if html_file is not None:
        err.print(f"HTML report with the changes marked: {html_file}", highlight=False, soft_wrap=True)
    raise typer.Exit(1 if failed else 0)


@app.command()
def matrix(
    versions: Annotated[list[str] | None, typer.Option(
        "--versions", help="PKG=V1,V2,...: a framework package (openai-agents, claude-agent-sdk, langgraph, ai) at "
                           "each version (repeatable)")] = None,
    versions_file: Annotated[Path | None, typer.Option(
        "--versions-file", help="the same as a YAML mapping: package -> list of versions")] = None,
    framework: Annotated[list[str] | None, typer.Option(
        "--framework", "-f", help="only these variants (F:VARIANT) of the frameworks the versions belong to")] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", "-s", help="scenario id glob")] = None,
    scenarios_from: ScenarioPaths = None,
    quick: Annotated[bool, typer.Option("--quick", help="leave out the scenarios tagged slow")] = False,
    out_dir: Annotated[Path, typer.Option("--out", help="where the merged results and the drift report go")
                       ] = Path("results/matrix"),
    report_only: Annotated[bool, typer.Option(
        "--report-only", help="only rebuild the drift report of --out (e.g. after merging parts run elsewhere)")
    ] = False,
) -> None:
    """The same suite across framework releases: an isolated, cached environment per version, one results set
    whose records carry their versions, and a drift report (report.md, report.html) of what changed between
    releases. A version that cannot be installed or driven is reported as unavailable.

    Example: `loopbench matrix --versions openai-agents=0.22.0,0.24.0 --versions ai=7.0.30,7.0.173 --quick`"""
    from loopbench.matrix import VersionSet, parse_versions, read_versions_file, run_matrix
    from loopbench.reports.drift import write_report

    if report_only:
        try:
            for path in write_report(out_dir):
                out.print(f"  {path}")
        except (BadInput, OSError) as exc:
            raise _fail(exc if isinstance(exc, BadInput) else BadInput(f"--out {out_dir}: {exc}")) from None
        return
    try:
        from loopbench.matrix import LOCK

        if not LOCK.exists():  # an installed wheel: the environments are built from a checkout's locks
            raise BadInput([InputProblem("matrix", "", f"needs a loopbench checkout ({LOCK} is missing): clone the "
                                         "repository and run it there")])
        specs = list(versions or []) + (read_versions_file(versions_file) if versions_file else [])
        sets = parse_versions(specs)
        _select(_load(scenarios_from), scenario or [])  # bad selections are bad input before anything is built
    except BadInput as exc:
        raise _fail(exc) from None
    common: list[str] = []
    for glob in scenario or []:
        common += ["-s", glob]
    for path in scenarios_from or []:
        common += ["--scenarios", str(path)]
    if quick:
        common.append("--quick")

    def run_args(vs: VersionSet) -> list[str]:  # the version set's framework, or the variants of it -f names
        fid = vs.framework
        mine = [f for f in framework or [] if f.partition(":")[0] == fid] or [fid]
        return [x for f in mine for x in ("-f", f)] + common

    results = run_matrix(sets, out_dir, run_args)
    for path in write_report(out_dir):
        out.print(f"  {path}")
    unavailable = [r for r in results if r.status != "ran"]
    out.print(f"{len(results) - len(unavailable)} of {len(results)} version set(s) ran"
              + "".join(f"; {r.vs.package} {r.vs.version} unavailable: {r.reason}" for r in unavailable))


@app.command()
def bench(
    out_dir: Annotated[Path, typer.Option("--out", help="where results.json and README.md go")] = Path("reports/bench"),
    suite: Annotated[bool, typer.Option("--suite/--no-suite", help="also time the full suite and --quick")] = True,
    published: Annotated[Path, typer.Option("--published", help="results the suite runs are diffed against")
                         ] = Path("reports/published"),
) -> None:
    """Benchmark: loopbench against a plain script per framework (wall and CPU ratios with their spread), the
    suite and --quick against their lower bound, each framework's own cost per model call, the model server.

    Example: `loopbench bench --no-suite` (the plain-script comparison only, without the two suite runs)"""
    from loopbench.bench import markdown, run_bench

    results = run_bench(out_dir, include_suite=suite, published=published)
    if suite:
        print(markdown(results))
    else:
        print(json.dumps(results, indent=2))
    out.print(f"written: {out_dir / 'results.json'}")


class SchemaKind(StrEnum):
    scenario = "scenario"
    record = "record"
    summary = "summary"
    diff = "diff"


@app.command()
def schema(what: Annotated[SchemaKind, typer.Argument(
        help="scenario (a scenario file), record (a RunRecord), summary (a report's summary.json) or diff "
             "(diff --format json)")]) -> None:
    """Print the JSON Schema of a scenario file, a RunRecord (one line of results.jsonl) or summary.json.

    Example: `loopbench schema record > record.schema.json` (docs/summary.schema.json is `schema summary`)"""
    if what is SchemaKind.scenario:
        from loopbench.harness.scenario import Scenario as model
    elif what is SchemaKind.summary:
        from loopbench.reports.summary import Summary as model  # type: ignore[assignment]
    elif what is SchemaKind.diff:
        from loopbench.reports.diff import DiffOut as model  # type: ignore[assignment]
    else:
        from loopbench.harness.record import RunRecord as model  # type: ignore[assignment]
    print(json.dumps(model.model_json_schema(), indent=2))


@app.command()
def serve(
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: a free one)")] = 0,
    scenario: Annotated[str | None, typer.Option("--scenario", help="serve this scenario's script to any key")] = None,
    scenarios_from: ScenarioPaths = None,
) -> None:
    """Run the scripted model server standalone, so any client can be pointed at a scenario.

    Example: `loopbench serve --scenario support_draft_completes --port 8400`, then point an OpenAI client at
    http://127.0.0.1:8400/v1 (any API key) and offer it the scenario's tools"""
    from loopbench.harness.model_server.app import serve_forever

    try:
        pool = _load(scenarios_from)
        if scenario is None and scenarios_from and len(pool) == 1:
            scenario = pool[0].id  # one scenario of your own: no need to name it again
        chosen = _select(pool, [scenario])[0] if scenario else None
        serve_forever(port, chosen)
    except BadInput as exc:
        raise _fail(exc) from None


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
