"""The exit code of `loopbench run`, decided here and nowhere else.

The policy, in the order it is applied once the runs are over:

- 2: bad input, refused before anything runs (a scenario file, a selection, `--out`; the command line turns any
  `BadInput` into this, loopbench/cli.py)
- 3: the output could not be written (a full disk): the records written before it are complete, no reports are
  written, and `loopbench run --out DIR --continue` runs the rest. (`report` exits 3 the same way when a report
  cannot be written.)
- 130 / 143: interrupted by SIGINT / SIGTERM: the finished runs are kept (and reported); `--continue` runs the rest
- 1: a run fails `--fail-on` (loopbench/fail_on.py): by default a run that ended in `error` (a run loopbench
  itself could not carry out) or `script_error` (the scenario's own fault); with `--fail-on deviation`, any
  verdict but conforms
- 0: otherwise, including deviations under the default `--fail-on error`: a deviation is a finding, not a failure

With the default (`--fail-on error` and no `--junit`), and when nothing was recorded, the code comes from the
run's own error count; otherwise the results are read back and every record is checked against `--fail-on`.
"""

from __future__ import annotations

from loopbench.harness.record import FailOn

OK = 0
FAILED = 1
BAD_INPUT = 2
UNWRITABLE = 3
INTERRUPTED_SIGINT = 130  # 128 + the signal number, as a shell reports it
INTERRUPTED_SIGTERM = 143


def interrupted(signal: str) -> int:
    """The exit code of a run stopped by `signal`: 143 for SIGTERM, 130 (SIGINT) otherwise."""
    return INTERRUPTED_SIGTERM if signal == "SIGTERM" else INTERRUPTED_SIGINT


def needs_records(kinds: list[FailOn], junit: bool, recorded: bool) -> bool:
    """Whether the exit code needs the records read back: not when nothing was recorded, nor for the default
    (errors only, no JUnit), which the run's own error count decides."""
    return recorded and (junit or kinds != [FailOn.error])


def exit_code(failed: bool) -> int:
    """1 when a run fails `--fail-on` (or, without reading the records back, a run ended in error), else 0."""
    return FAILED if failed else OK
