"""What a record says about where it ran: the loopbench revision, Python and Node, the machine."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any

from loopbench import __version__

# the checkout this code runs from, when it does (an installed wheel has no .git beside its package)
CHECKOUT = Path(str(resources.files("loopbench"))).parent


def loopbench_revision() -> str:
    """The checkout's git revision (`+dirty` with uncommitted changes); an installed wheel: `v<version>`."""
    if not (CHECKOUT / ".git").exists():
        return f"v{__version__}"
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=CHECKOUT, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=CHECKOUT, capture_output=True, text=True,
                               timeout=5).stdout.strip()
        return (rev + ("+dirty" if dirty else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment() -> dict[str, Any]:
    import psutil

    return {
        "loopbench_revision": loopbench_revision(),
        "python": platform.python_version(),
        "node": shutil.which("node")
        and subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        "platform": platform.platform(),
        "cores": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }
