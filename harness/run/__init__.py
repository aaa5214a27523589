"""Running a suite (`loopbench.harness.run`): the runner that orchestrates (`runner`), warm worker processes
(`worker`, `pool`, spoken to with the typed `messages`), the order of tasks and the number of slots
(`schedule`), progress on the terminal (`progress`), where a run happened (`environment`) and the end of every
process a segment started (`reaper`).

Owns: processes and time. May import: every other part of the core (it is the core's top layer), never the
reports or an adapter module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopbench.harness.lazy import exports

if TYPE_CHECKING:
    from loopbench.harness.run.runner import RunPlan, SuiteSummary, run_suite

# imported on first use (harness/lazy.py): a light part of this package never imports the rest
__getattr__ = exports(__name__, {
    "RunPlan": "loopbench.harness.run.runner",
    "SuiteSummary": "loopbench.harness.run.runner",
    "run_suite": "loopbench.harness.run.runner",
})
__all__ = ["RunPlan", "SuiteSummary", "run_suite"]
