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
