import sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[2]))  # the repo root
from pathlib import Path
from loopbench.harness.adapter import resolve_selection
from loopbench.harness.run.runner import RunPlan, run_suite
from loopbench.harness.scenario import load_scenarios
plan = RunPlan(scenarios=[s for s in load_scenarios() if s.id == "model_fatal_error"],
               variants=resolve_selection(["claude-agent-sdk"]), jobs=2, out_dir=Path(sys.argv[1]),
               show_progress=False, hard_margin_s=400)
run_suite(plan)
