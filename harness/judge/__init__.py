"""Judging (`loopbench.harness.judge`): a business task's evidence in, one RunRecord out — pure, no processes.

`outcome` (the ordered outcome rules, named in `OutcomeRule`), `verdict` (the record against the scenario's
ideal), `counters` (ground truth next to what the framework reported), `prices` (cost per model), `judging`
(all of it into the record). Owns: how a run is read. May import: the shared vocabulary and
`harness.scenario`.
"""

from loopbench.harness.judge.judging import Judgement, TaskEvidence, TaskIdentity, judge

__all__ = ["Judgement", "TaskEvidence", "TaskIdentity", "judge"]
