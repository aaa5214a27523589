"""Where the Vercel AI SDK's Node driver and its npm dependencies live, and installing them on first use.

The driver's files (`vercel/driver.mjs`, `package.json`, `package-lock.json`) ship as package data. Node
resolves `import 'ai'` from the driver file's own directory, so the driver runs from a directory that has
`node_modules` beside it:
- a checkout, where `make` ran `npm ci` in `adapters/vercel/`: the shipped directory itself;
- an installed wheel: a user cache directory (`$LOOPBENCH_CACHE`, else `$XDG_CACHE_HOME/loopbench`, else
  `~/.cache/loopbench`), one per content of the shipped files, filled once with `npm ci` from the shipped lock
  (exact versions, like any other install of this project) under a file lock, so concurrent workers install
  it once.
Versions are read from the lock, so `loopbench list` can name them before anything is installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from loopbench.harness.errors import LoopbenchError

SHIPPED = Path(__file__).resolve().parent / "vercel"
FILES = ("driver.mjs", "package.json", "package-lock.json")
STAMP = ".installed"  # written after a complete `npm ci` (the Makefile writes the same stamp)
NODE_DIR_ENV = "LOOPBENCH_NODE_DIR"  # a driver directory of its own: the version matrix's other `ai` releases
NPM_TIMEOUT_S = 600


class NodeMissing(LoopbenchError):
    """Node.js / npm is not on PATH, or `npm ci` failed: the driver cannot be installed."""


def _has_modules(d: Path) -> bool:
    return (d / "node_modules" / "ai" / "package.json").exists() and (d / "node_modules" / ".bin" / "node").exists()


def cache_dir() -> Path:
    root = os.environ.get("LOOPBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "loopbench")
    digest = hashlib.sha256(b"".join((SHIPPED / f).read_bytes() for f in FILES)).hexdigest()[:16]
    return Path(root) / f"vercel-driver-{digest}"


def installed_dir() -> Path | None:
    """The directory the driver runs from, when its dependencies are installed; None before the first install."""
    if own := os.environ.get(NODE_DIR_ENV):
        return Path(own) if _has_modules(Path(own)) else None
    if _has_modules(SHIPPED):
        return SHIPPED
    cached = cache_dir()
    if (cached / STAMP).exists() and _has_modules(cached):
        return cached
    return None


def missing_reason() -> str | None:
    """Why the driver cannot be installed here (None when it is installed or can be)."""
    if installed_dir() is not None:
        return None
    if own := os.environ.get(NODE_DIR_ENV):
        return f"{NODE_DIR_ENV}={own} holds no installed driver (node_modules/ai)"
    if shutil.which("npm") is None:
        return ("Node.js with npm is needed to install the Vercel AI SDK driver (the npm packages ai, @ai-sdk/openai "
                "and node@22 from the shipped package-lock.json) and is not on PATH")
    return None


def ensure_installed() -> Path:
    """The driver's directory, installing its npm dependencies into the user cache first when needed."""
    found = installed_dir()
    if found is not None:
        return found
    if (why := missing_reason()) is not None:
        raise NodeMissing(why)
    target = cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing the same files
        if not (target / STAMP).exists():
            for name in FILES:
                shutil.copy2(SHIPPED / name, target / name)
            done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target,
                                  capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
            if done.returncode != 0:
                raise NodeMissing(f"`npm ci` in {target} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
            (target / STAMP).write_text("")
    return target


def locked_versions() -> dict[str, str]:
    """Exact versions of the top-level npm packages, from the shipped lock."""
    lock = json.loads((SHIPPED / "package-lock.json").read_text())
    direct = lock.get("packages", {}).get("", {}).get("dependencies", {})
    out = {}
    for name in direct:
        version = lock.get("packages", {}).get(f"node_modules/{name}", {}).get("version")
        if version:
            out[name] = version
    return out
