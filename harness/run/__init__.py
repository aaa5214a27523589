"""Running a suite (`loopbench.harness.run`): the runner that orchestrates (`runner`), warm worker processes
(`worker`, `pool`, spoken to with the typed `messages`), the order of tasks and the number of slots
(`schedule`), progress on the terminal (`progress`), where a run happened (`environment`) and the end of every
process a segment started (`reaper`).

Owns: processes and time. May import: every other part of the core (it is the core's top layer), never the
reports or an adapter module.
"""

from loopbench.harness.run.runner import RunPlan, SuiteSummary, run_suite

__all__ = ["RunPlan", "SuiteSummary", "run_suite"]
