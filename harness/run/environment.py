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


# What a worker (and the framework children it starts: a Claude CLI, a Node driver) gets from this process's
# environment: an allow-list, so no credential, token or proxy setting of the user's reaches a framework. Every
# address loopbench talks to is loopback, so proxies are switched off for it explicitly as well.
CHILD_ENV_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR", "TEMP", "TMP",
    "PYTHONPATH", "PYTHONHASHSEED", "VIRTUAL_ENV", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
    "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
})
CHILD_ENV_PREFIXES = ("LC_", "LOOPBENCH_", "npm_config_")
LOOPBACK = "127.0.0.1,localhost,::1"


def child_environment(parent: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a worker process: the allow-listed variables of `parent` (default: this process),
    loopback exempt from any proxy, unbuffered Python output."""
    parent = dict(os.environ) if parent is None else parent
    env = {k: v for k, v in parent.items() if k in CHILD_ENV_NAMES or k.startswith(CHILD_ENV_PREFIXES)}
    env.update(NO_PROXY=LOOPBACK, no_proxy=LOOPBACK, PYTHONUNBUFFERED="1")
    return env
