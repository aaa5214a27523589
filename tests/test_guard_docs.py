"""docs/guard.md's examples run as written: each ```python block, in a fresh namespace, in this process (the
framework examples import their SDKs: a process-tier test); each framework's section has one that pauses for an
approval and runs the approved call once."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "guard.md"


def test_every_example_in_the_guard_page_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/guard.md has examples"
    for i, block in enumerate(blocks):
        exec(compile(block, f"{DOC.name}[{i}]", "exec"), {"__name__": f"guard_example_{i}"})
    printed = capsys.readouterr().out
    assert printed.count("stopped: limit: tool_calls: 3 used + 0 in flight + 1 for this call > the cap of 3") >= 2
    approving = sum("approved once" in b for b in blocks)
    assert approving >= 2 and printed.count("approved once: ['ana@example.com']") == approving


def test_the_guard_s_cost_quoted_is_the_benchmark_s():
    """docs/guard.md quotes the guard's cost per call as reports/bench/results.json measured it."""
    import json

    guard = json.loads((DOC.parent.parent / "reports" / "bench" / "results.json").read_text())["guard"]
    p50 = {what: f"{c['p50_us']} µs" for what, c in guard.items()}
    text = " ".join(DOC.read_text().split())
    assert (f"a median of {p50['model_call_in_process']} per model call and {p50['tool_call_in_process']} per tool "
            f"call in process, {p50['model_call_over_http'].removesuffix(' µs')} µs and "
            f"{p50['tool_call_over_http']} over the HTTP service") in text, p50
