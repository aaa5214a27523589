"""Regenerate tests/data/reports_small/ from a real results directory (default /tmp/lb2, openai-agents 0.24.0).

Keeps a handful of openai-agents default runs, copies two of their traces, and synthesizes a second
framework ("langgraph") by renaming the framework in a copy of each record, plus a second repetition of one
langgraph cell with another outcome (an unstable cell). Run: .venv/bin/python tests/data/make_reports_fixture.py
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

SRC = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/lb2")
OUT = Path(__file__).resolve().parent / "reports_small"
KEEP = ["support_draft_completes", "runaway_step_limit", "approval_pause", "approval_approved_resume",
        "approval_rejected_resume", "stops_without_finishing", "resume_keeps_allowance", "huge_tool_output",
        "cost_budget", "model_transient_error", "deadline_slow_model"]
TRACES = ["support_draft_completes", "runaway_step_limit"]


def main() -> None:
    recs = [json.loads(line) for line in (SRC / "results.jsonl").read_text().splitlines() if line.strip()]
    chosen = [r for r in recs if r["framework"] == "openai-agents" and r["variant"] == "default"
              and r["scenario"] in KEEP]
    chosen.sort(key=lambda r: KEEP.index(r["scenario"]))
    from loopbench.harness.scenario import load_scenarios

    suite = {s.id: s for s in load_scenarios()}
    for r in chosen:  # records written before titles and categories were recorded get the suite's
        r.setdefault("scenario_title", suite[r["scenario"]].title)
        r.setdefault("category", suite[r["scenario"]].category)
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "traces").mkdir(parents=True)
    lines = []
    for r in chosen:
        lines.append(r)
        if r["scenario"] in TRACES:
            shutil.copy(SRC / r["trace"], OUT / r["trace"])
    for r in chosen:
        lg = json.loads(json.dumps(r).replace("openai-agents", "langgraph"))
        lg["framework_version"] = "1.2.24"
        lg["packages"] = {"langgraph": "1.2.24", "langchain": "1.5.2", "langchain-openai": "1.7.4"}
        lines.append(lg)
        if r["scenario"] == "stops_without_finishing":  # a second repetition that disagrees: unstable
            r2 = json.loads(json.dumps(lg))
            r2["repetition"] = 2
            r2["run_id"] = r2["run_id"].replace("-r1-", "-r2-")
            r2["outcome"], r2["outcome_rule"], r2["verdict"] = "completed", 8, "deviates"
            r2["deviations"] = [{"name": "outcome", "ideal": "incomplete", "observed": "completed", "note": ""}]
            lines.append(r2)
    (OUT / "results.jsonl").write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
    print(f"{len(lines)} records -> {OUT}")


if __name__ == "__main__":
    main()
