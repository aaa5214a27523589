"""The stability check's result: the timing-sensitive cells (a deadline, a scripted delay or timeout) run again,
several times, beside a CPU hog, each repetition compared with a published run (`loopbench stability`,
`make stability`, run by loopbench/stability.py). Written as `stability.json` beside the results it checked, so
the report's Stability section shows what was checked, against which publication, and what changed."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loopbench.harness.errors import BadInput, InputProblem, validation_problems

STABILITY_NAME = "stability.json"
STABILITY_VERSION = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StabilityChange(_Frozen):
    """One repetition of one cell that behaved unlike the published cell (`diff`'s comparison)."""

    scenario: str
    column: str
    repetition: int
    changes: list[str] = Field(description="what differs, as `what: published -> now`")


class StabilityCheck(_Frozen):
    stability_version: int = STABILITY_VERSION
    checked_at: str = Field(description="UTC time the check ended")
    loopbench_revision: str | None = Field(description="the revision that ran the check")
    against: str = Field(description="the published results file compared with")
    against_revision: str | None = Field(description="the loopbench revision of the published records")
    cores: int
    hog_processes: int = Field(description="busy processes beside the runs (one per core)")
    repetitions: int
    scenarios: list[str] = Field(description="the timing-sensitive scenarios checked")
    columns: list[str] = Field(description="the framework variants checked")
    runs: int = Field(description="runs made: scenarios x columns x repetitions")
    changed: list[StabilityChange] = Field(description="repetitions whose cell differs from the published one")
    missing: list[str] = Field(description="cells checked that the published results do not have")

    @property
    def holds(self) -> bool:
        return not self.changed and not self.missing and self.runs > 0


def write_check(check: StabilityCheck, out_dir: Path) -> Path:
    path = out_dir / STABILITY_NAME
    path.write_text(check.model_dump_json(indent=1) + "\n")
    return path


def read_check(results_dir: Path) -> StabilityCheck | None:
    """The stability check stored beside a results file (None: there is none); BadInput for a broken one."""
    path = results_dir / STABILITY_NAME
    if not path.is_file():
        return None
    try:
        return StabilityCheck.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise BadInput([InputProblem(str(path), "", f"not JSON ({exc.msg}, line {exc.lineno})")]) from None
    except ValidationError as exc:
        raise BadInput(validation_problems(exc, str(path))) from None


def stability_sentence(check: StabilityCheck, revision: str | None) -> str:
    """What the check found, in one paragraph, saying whether it checked these very results (`revision`: the
    loopbench revision of the results the report shows)."""
    which = ("these results" if check.against_revision is not None and check.against_revision == revision
             else f"the published results of loopbench {check.against_revision or 'an unknown revision'}")
    found = ("every repetition matched its published cell (0 changed)" if check.holds else
             f"{len(check.changed)} repetition(s) differed from their published cell and {len(check.missing)} "
             "cell(s) were not published")
    load = (f"beside a CPU hog of {check.hog_processes} busy process(es) on {check.cores} core(s)"
            if check.hog_processes else f"without a CPU hog, on {check.cores} core(s)")
    return (f"Stability check ({check.checked_at}, loopbench {check.loopbench_revision}): the "
            f"{len(check.scenarios)} timing-sensitive scenario(s) ({', '.join(check.scenarios)}) × "
            f"{len(check.columns)} framework variant(s), {check.repetitions} repetition(s) each ({check.runs} runs) "
            f"{load}, each compared with {which}: {found}.")
