"""The `loopbench` command line: the only place that composes the harness and the reports.

This module is the table of commands: the typer app, every option with its help text, and a thin wrapper per
command over the work in loopbench/commands/. Bad input is handled once, for every command, by the app's
command group (`_Commands`): a `BadInput` raised anywhere in a command is its `error ...` lines and exit 2.

Exit codes: 0 every run produced a record (deviations are findings, not failures); 1 a run ended in
`error`; 2 bad input (refused before anything runs); 3 the output could not be written (a full disk): what was
written is complete and `--continue` runs the rest. (`run`'s policy in full: loopbench/commands/exit_policy.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from loopbench.commands.choices import DiffFormat, FailOnChoice, SchemaKind

if TYPE_CHECKING:
    from loopbench.harness.errors import BadInput
    from loopbench.harness.record import FailOn

# Each command imports its work (loopbench/commands/, the harness, the reports) when it runs, never at start-up:
# `loopbench --help` reads only this table (`loopbench bench` measures how long it takes).


def _fail(exc: BadInput) -> typer.Exit:
    """The bad-input rule: each problem as an `error ...` line on stderr, then exit 2."""
    from rich.markup import escape

    from loopbench.commands.common import err
    from loopbench.commands.exit_policy import BAD_INPUT

    for problem in exc.problems:
        # the problem's text is the user's and the file's (a field path `script[retry]`, a quoted value): never markup
        err.print(f"[red]error[/red] {escape(str(problem).lstrip(': '))}", highlight=False, soft_wrap=True)
    return typer.Exit(BAD_INPUT)


def _fail_on(choices: list[FailOnChoice] | None) -> list[FailOn] | None:
    from loopbench.harness.record import FailOn

    return None if choices is None else [FailOn(c.value) for c in choices]


class _Commands(TyperGroup):
    """loopbench's command group: the one place a command's `BadInput` becomes the exit-2 message (`_fail`)."""

    def invoke(self, ctx: Any) -> Any:  # a click Context (newer typer vendors click: no public type fits all)
        from loopbench.harness.errors import BadInput

        try:
            return super().invoke(ctx)
        except BadInput as exc:
            raise _fail(exc) from None


# plain help (click's): rich's help formatter alone imports ~0.45 s of modules before the first line
app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  pretty_exceptions_enable=False,
                  help="How does my agent framework's loop really stop?")


ScenarioPaths = Annotated[list[Path] | None, typer.Option(
    "--scenarios", help="a scenario directory or file of your own, instead of the built-in suite (repeatable); a "
    "directory's _suite.yaml with `extends: builtin` uses the built-in tool catalogue and defaults")]


@app.command("list")
def list_(as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
          scenarios_from: ScenarioPaths = None) -> None:
    """The scenarios (category, claims) and the frameworks with their variants and versions.

    Example: `loopbench list --scenarios my_scenarios/`"""
    from loopbench.commands import scenarios as scenarios_cmd
    scenarios_cmd.list_(as_json, scenarios_from)


@app.command()
def validate(
    files: Annotated[list[Path] | None, typer.Argument(help="scenario files (default: the suite)")] = None,
    scenarios_from: ScenarioPaths = None,
) -> None:
    """Check scenario files; report every problem found (exit 2) or confirm them (exit 0).

    Example: `loopbench validate --scenarios my_scenarios/` (a file's defaults come from the _suite.yaml beside
    it)"""
    from loopbench.commands import scenarios as scenarios_cmd
    scenarios_cmd.validate(files, scenarios_from)


@app.command()
def run(
    framework: Annotated[
        list[str] | None, typer.Option(
            "--framework", "-f", help="a framework: `-f F` runs every variant (idiom) of F, `-f F:VARIANT` that one "
            "only (repeatable; default: every framework variant; `loopbench list` names them)")
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
    fail_on: Annotated[list[FailOnChoice] | None, typer.Option(
        "--fail-on", help="exit 1 when a run is an error (default) or, with deviation, any verdict but conforms "
                          "(repeatable)")] = None,
    shard: Annotated[str | None, typer.Option(
        "--shard", help="K/N: only shard K of N of the selected runs, balanced by expected duration (the same "
        "selection in each of N jobs; `loopbench merge` joins them)")] = None,
) -> None:
    """Run the suite: DIR/results.jsonl (one RunRecord per line, appended as each run finishes) and DIR/traces/.

    Each run without --out writes a new results/<UTC time>/ and moves results/latest to it once it has a
    record; earlier results stay where they are. Examples:

    \b
      loopbench run                                  # everything; then `loopbench report`, `loopbench diff BASE`
      loopbench run -f langgraph -s 'approval_*'     # one framework, a glob of scenarios
      loopbench run --continue                       # finish an interrupted run in results/latest
      loopbench run --scenarios my_scenarios/        # your own scenario files instead of the built-in suite
      loopbench run --loop-cmd 'python my_loop.py'   # your own loop through the suite (docs/loop-protocol.md)
      loopbench run --junit junit.xml --fail-on deviation   # in CI: a testcase per cell, fail on any deviation
      loopbench run --shard 2/3 --out part2          # a third of the runs; `loopbench merge part1 part2 part3`
    """
    from loopbench.commands import run as run_cmd
    raise typer.Exit(run_cmd.run(
        framework=framework, scenario=scenario, scenarios_from=scenarios_from, quick=quick, jobs=jobs,
        repeat=repeat, out_dir=out_dir, resume_partial=resume_partial, force=force, loop_cmd=loop_cmd,
        loop_name=loop_name, hard_margin=hard_margin, junit=junit, fail_on=_fail_on(fail_on), shard=shard))


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
    from loopbench.commands import results as results_cmd
    results_cmd.report(results, formats, baseline)


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="a run id (or a unique prefix)")],
    results: Annotated[Path | None, typer.Option(
        "--results", "--out", help="results directory (default: results/latest)")] = None,
) -> None:
    """Print one run's record, trace and request log readably.

    Example: `loopbench show approval_pause-langgraph` (a unique prefix of a run id in the latest results)"""
    from loopbench.commands import results as results_cmd
    results_cmd.show(run_id, results)


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
    fail_on: Annotated[list[FailOnChoice] | None, typer.Option(
        "--fail-on", help="exit 1 on change (default), and/or on deviation or error in NEW (repeatable)")] = None,
) -> None:
    """Behaviour changes between two result sets (exit 0 unchanged, 1 changed, 2 bad input).

    Example, after an SDK upgrade: `make run && loopbench diff reports/published --html changes.html`; in CI,
    `loopbench diff reports/published results/ci -f langgraph --junit diff.xml --format json > diff.json`"""
    from loopbench.commands import results as results_cmd
    raise typer.Exit(results_cmd.diff(base, new, html_file=html_file, junit=junit, output=output,
                                      framework=framework, fail_on=_fail_on(fail_on)))


@app.command()
def merge(
    parts: Annotated[list[Path], typer.Argument(help="results directories: the shards of one selection, or any "
                                                "results of one loopbench revision and framework versions")],
    out_dir: Annotated[Path, typer.Option("--out", help="where the merged results and their reports go")],
    force: Annotated[bool, typer.Option("--force", help="replace the results --out already holds")] = False,
) -> None:
    """Join results directories (the shards of `run --shard K/N`) into one results set and write its reports.
    Refused (exit 2, nothing written) when a run is in two of them, they were run by different loopbench
    revisions or framework versions, or a shard (or a run of one) is missing.

    Example: `loopbench merge part1 part2 part3 --out results/ci`"""
    from loopbench.commands import merge as merge_cmd
    merge_cmd.merge(parts, out_dir, force)


@app.command()
def matrix(
    versions: Annotated[list[str] | None, typer.Option(
        "--versions", help="PKG=V1,V2,...: a built-in framework's package (its `distribution`, e.g. openai-agents, "
                           "pydantic-ai-slim, ai, @mastra/core) at each version (repeatable)")] = None,
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
    ray: Annotated[str | None, typer.Option(
        "--ray", metavar="ADDRESS",
        help="run each version set as a Ray task (the `ray` extra) on the cluster at ADDRESS (HOST:PORT, or "
             "`auto`: the one this node belongs to), or `local`: on a Ray instance started here")] = None,
    ray_shards: Annotated[int, typer.Option(
        "--ray-shards", min=1, max=100, help="with --ray: split each version set's runs into N tasks (run --shard)")
    ] = 1,
    ray_cpus: Annotated[int, typer.Option(
        "--ray-cpus", min=1, max=64, help="with --ray: CPUs each task asks for (and its run's --jobs)")] = 2,
    ray_retries: Annotated[int, typer.Option(
        "--ray-retries", min=0, max=10, help="with --ray: retries of a task that fails or whose node dies")] = 2,
) -> None:
    """The same suite across framework releases: an isolated, cached environment per version, one results set
    whose records carry their versions, and a drift report (report.md, report.html) of what changed between
    releases. A version that cannot be installed or driven is reported as unavailable.

    Example: `loopbench matrix --versions openai-agents=0.22.0,0.24.0 --versions ai=7.0.30,7.0.173 --quick`; on
    a Ray cluster, from one of its nodes: `loopbench matrix --versions-file versions.yaml --ray auto`"""
    from loopbench.commands import matrix as matrix_cmd
    matrix_cmd.matrix(versions=versions, versions_file=versions_file, framework=framework, scenario=scenario,
                      scenarios_from=scenarios_from, quick=quick, out_dir=out_dir, report_only=report_only,
                      ray=ray, ray_shards=ray_shards, ray_cpus=ray_cpus, ray_retries=ray_retries)


@app.command()
def bench(
    out_dir: Annotated[Path, typer.Option("--out", help="where results.json and README.md go")] = Path("reports/bench"),
    suite: Annotated[bool, typer.Option("--suite/--no-suite", help="also time the full suite and --quick")] = True,
    published: Annotated[Path, typer.Option("--published", help="results the suite runs are diffed against")
                         ] = Path("reports/published"),
    startup_only: Annotated[bool, typer.Option(
        "--startup-only", help="only time the command line's start-up, merged into --out's results.json")] = False,
    guard_only: Annotated[bool, typer.Option(
        "--guard-only", help="only measure loopbench.guard's cost per call, merged into --out's results.json")
    ] = False,
) -> None:
    """Benchmark: loopbench against a plain script per framework (wall and CPU ratios with their spread), the
    suite and --quick against their lower bound, each framework's own cost per model call, the model server, the
    command line's start-up, the guard's own cost per call.

    Example: `loopbench bench --no-suite` (the plain-script comparison only, without the two suite runs)"""
    from loopbench.commands import bench as bench_cmd
    bench_cmd.bench(out_dir, suite, published, startup_only, guard_only)


@app.command()
def stability(
    published: Annotated[Path, typer.Option("--published", help="the results each repetition is compared with")
                         ] = Path("reports/published"),
    out_dir: Annotated[Path, typer.Option("--out", help="where the runs and stability.json go")
                       ] = Path("results/stability"),
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="repetitions of each cell")] = 3,
    framework: Annotated[list[str] | None, typer.Option(
        "--framework", "-f", help="a framework (every variant) or framework:variant; repeatable (default: all)")
    ] = None,
    hog: Annotated[bool, typer.Option("--hog/--no-hog", help="run beside one busy process per core")] = True,
) -> None:
    """Do the timing-sensitive cells hold on a busy machine? Every scenario with a deadline or a scripted delay,
    on every framework variant, `--repeat` times beside a CPU hog; each repetition compared with the published
    cell as `diff` compares cells. Exit 1 when any repetition differs. `make stability` runs it against
    reports/published and stores stability.json there, which the report's Stability section shows.

    Example: `loopbench stability -f mastra --repeat 5`"""
    from loopbench.commands import stability as stability_cmd
    raise typer.Exit(stability_cmd.stability(published, out_dir, repeat, framework, hog))


@app.command()
def schema(what: Annotated[SchemaKind, typer.Argument(
        help="scenario (a scenario file), record (a RunRecord), summary (a report's summary.json) or diff "
             "(diff --format json)")]) -> None:
    """Print the JSON Schema of a scenario file, a RunRecord (one line of results.jsonl) or summary.json.

    Example: `loopbench schema record > record.schema.json` (docs/summary.schema.json is `schema summary`)"""
    from loopbench.commands import scenarios as scenarios_cmd
    scenarios_cmd.schema(what)


@app.command()
def serve(
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: a free one)")] = 0,
    scenario: Annotated[str | None, typer.Option("--scenario", help="serve this scenario's script to any key")] = None,
    scenarios_from: ScenarioPaths = None,
) -> None:
    """Run the scripted model server standalone, so any client can be pointed at a scenario.

    Example: `loopbench serve --scenario support_draft_completes --port 8400`, then point an OpenAI client at
    http://127.0.0.1:8400/v1 (any API key) and offer it the scenario's tools"""
    from loopbench.commands import serve as serve_cmd
    serve_cmd.serve(port, scenario, scenarios_from)


def main() -> None:  # pragma: no cover - console entry point
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
