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
The logic is `adapters/node_driver.py`'s `NodeHome` (shared with the Mastra driver); these functions read this
module's constants at each call (tests point `SHIPPED` elsewhere).
"""

from __future__ import annotations

from pathlib import Path

from loopbench.adapters.node_driver import NPM_TIMEOUT_S, STAMP, NodeHome, NodeMissing

__all__ = ["FILES", "NODE_DIR_ENV", "NPM_TIMEOUT_S", "SHIPPED", "STAMP", "NodeMissing", "cache_dir",
           "ensure_installed", "home", "installed_dir", "locked_versions", "missing_reason"]

SHIPPED = Path(__file__).resolve().parent / "vercel"
FILES = ("driver.mjs", "package.json", "package-lock.json")
NODE_DIR_ENV = "LOOPBENCH_NODE_DIR"  # a driver directory of its own: the version matrix's other `ai` releases


def home() -> NodeHome:
    """The Vercel driver's Node project, as this module's constants say now."""
    return NodeHome(SHIPPED, FILES, NODE_DIR_ENV, marker="ai", cache_prefix="vercel-driver",
                    needs="the Vercel AI SDK driver (the npm packages ai, @ai-sdk/openai, @ai-sdk/anthropic and "
                          "node@22 from the shipped package-lock.json)")


def _has_modules(d: Path) -> bool:
    return home().has_modules(d)


def cache_dir() -> Path:
    return home().cache_dir()


def installed_dir() -> Path | None:
    """The directory the driver runs from, when its dependencies are installed; None before the first install."""
    return home().installed_dir()


def missing_reason() -> str | None:
    """Why the driver cannot be installed here (None when it is installed or can be)."""
    return home().missing_reason()


def ensure_installed() -> Path:
    """The driver's directory, installing its npm dependencies into the user cache first when needed."""
    return home().ensure_installed()


def locked_versions() -> dict[str, str]:
    """Exact versions of the top-level npm packages, from the shipped lock."""
    return home().locked_versions()
