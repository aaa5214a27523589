"""`loopbench matrix`: the suite across framework releases, each version set run by `loopbench.matrix` in its own
environment, then the drift report (reports/drift.py)."""

from __future__ import annotations

from pathlib import Path

from loopbench.commands.common import load_suite, out, select
from loopbench.harness.errors import BadInput, InputProblem


def matrix(*, versions: list[str] | None, versions_file: Path | None, framework: list[str] | None,
           scenario: list[str] | None, scenarios_from: list[Path] | None, quick: bool, out_dir: Path,
           report_only: bool, ray: str | None = None, ray_shards: int = 1, ray_cpus: int = 2,
           ray_retries: int = 2) -> None:
    """Run each version set and write the drift report of `out_dir` (with `report_only`, only the report).
    BadInput for bad versions or selections, before anything is built."""
    from loopbench.matrix import VersionSet, parse_versions, read_versions_file, run_matrix
    from loopbench.reports.drift import write_report

    if report_only:
        try:
            for path in write_report(out_dir):
                out.print(f"  {path}")
        except OSError as exc:
            raise BadInput(f"--out {out_dir}: {exc}") from None
        return
    from loopbench.matrix import LOCK

    if not LOCK.exists():  # an installed wheel: the environments are built from a checkout's locks
        raise BadInput([InputProblem("matrix", "", f"needs a loopbench checkout ({LOCK} is missing): clone the "
                                     "repository and run it there")])
    specs = list(versions or []) + (read_versions_file(versions_file) if versions_file else [])
    sets = parse_versions(specs)
    select(load_suite(scenarios_from), scenario or [])  # bad selections are bad input before anything is built
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

    if ray is None:
        results = run_matrix(sets, out_dir, run_args)
    else:
        from loopbench.ray_matrix import run_matrix_ray

        results = run_matrix_ray(sets, out_dir, run_args, address=ray, shards=ray_shards, cpus=ray_cpus,
                                 retries=ray_retries)
    for path in write_report(out_dir):
        out.print(f"  {path}")
    unavailable = [r for r in results if r.status != "ran"]
    out.print(f"{len(results) - len(unavailable)} of {len(results)} version set(s) ran"
              + "".join(f"; {r.vs.package} {r.vs.version} unavailable: {r.reason}" for r in unavailable))
