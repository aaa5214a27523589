"""Scenarios (`loopbench.harness.scenario`): the schema of a scenario file (`model`), loading files with
their directory's defaults and every cross-check (`load`), and reading YAML input safely (`yaml_input`).

Owns: what a scenario may say. May import: the shared vocabulary (`harness.record`, `harness.errors`,
`harness.markers`) only. The names most code needs are re-exported here.
"""

from loopbench.harness.scenario.load import (
    SCENARIO_DIR,
    SUITE_DEFAULTS_FILE,
    expand_paths,
    load_defaults,
    load_scenarios,
    parse_scenario,
    scenario_files,
)
from loopbench.harness.scenario.model import (
    After,
    Bound,
    Completion,
    Expect,
    HttpFailure,
    Scenario,
    ToolSpec,
    ToolStep,
    Turn,
    WireFault,
)

__all__ = [
    "SCENARIO_DIR", "SUITE_DEFAULTS_FILE", "After", "Bound", "Completion", "Expect", "HttpFailure", "Scenario",
    "ToolSpec", "ToolStep", "Turn", "WireFault", "expand_paths", "load_defaults", "load_scenarios", "parse_scenario",
    "scenario_files",
]
