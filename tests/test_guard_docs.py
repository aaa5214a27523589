"""docs/guard.md's examples run as written: each ```python block, in a fresh namespace, in this process (the
pydantic-ai one imports its SDK: a process-tier test)."""

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
    assert printed.count("stopped: limit: tool_calls: 3 used + 0 in flight + 1 for this call > the cap of 3") == 2
    assert "approved once: ['ana@example.com']" in printed
