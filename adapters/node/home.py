"""Where an npm framework's shipped Node project lives, and installing its locked npm dependencies on first use
(`NodeHome`); the adapter reads its versions and availability from it (adapters/node/adapter.py `NodeAdapter`).

A Node adapter ships a Node project as package data (its driver, the shared `protocol.mjs` — in the checkout a
link to adapters/node/protocol.mjs, in every copy a file of its own — `package.json`, `package-lock.json`). Node
resolves imports from the driver file's own directory, so the driver runs from a directory with `node_modules`
beside it:
- a checkout, where `make install` ran `npm ci` in the project: the shipped directory itself;
- an installed wheel: a user cache directory (`$LOOPBENCH_CACHE`, else `$XDG_CACHE_HOME/loopbench`, else
  `~/.cache/loopbench`), one per content of the shipped files, filled once with `npm ci` from the shipped lock
  (exact versions) under a file lock, so concurrent workers install it once;
- a directory of its own named by the project's environment variable (the version matrix's other releases).
Versions are read from the lock until something is installed, so `loopbench list` can name them first.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from loopbench.harness.errors import LoopbenchError

STAMP = ".installed"  # written after a complete `npm ci` (the Makefile writes the same stamp)
NPM_TIMEOUT_S = 600


class NodeMissing(LoopbenchError):
    """Node.js / npm is not on PATH, or `npm ci` failed: the driver cannot be installed."""


@dataclass(frozen=True)
class NodeHome:
    """One shipped Node project and where its installed copy is."""

    shipped: Path  # the project as shipped (package data)
    files: tuple[str, ...]  # what a copy needs (the cache key is their content; a link is copied as its target)
    dir_env: str  # an environment variable naming a directory of its own
    marker: str  # an npm package whose presence in node_modules says the install is there
    cache_prefix: str  # the cache directory's name: <prefix>-<digest>
    needs: str  # what `npm ci` installs, for the message when npm is missing

    def has_modules(self, d: Path) -> bool:
        return ((d / "node_modules" / self.marker / "package.json").exists()
                and (d / "node_modules" / ".bin" / "node").exists())

    def cache_dir(self) -> Path:
        root = os.environ.get("LOOPBENCH_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "loopbench")
        digest = hashlib.sha256(b"".join((self.shipped / f).read_bytes() for f in self.files)).hexdigest()[:16]
        return Path(root) / f"{self.cache_prefix}-{digest}"

    def installed_dir(self) -> Path | None:
        """The directory the driver runs from when its dependencies are installed; None before the first install."""
        if own := os.environ.get(self.dir_env):
            return Path(own) if self.has_modules(Path(own)) else None
        if self.has_modules(self.shipped):
            return self.shipped
        cached = self.cache_dir()
        if (cached / STAMP).exists() and self.has_modules(cached):
            return cached
        return None

    def missing_reason(self) -> str | None:
        """Why the driver cannot be installed here (None when it is installed or can be)."""
        if self.installed_dir() is not None:
            return None
        if own := os.environ.get(self.dir_env):
            return f"{self.dir_env}={own} holds no installed driver (node_modules/{self.marker})"
        if shutil.which("npm") is None:
            return f"Node.js with npm is needed to install {self.needs} and is not on PATH"
        return None

    def ensure_installed(self) -> Path:
        """The driver's directory, installing its npm dependencies into the user cache first when needed."""
        found = self.installed_dir()
        if found is not None:
            return found
        if (why := self.missing_reason()) is not None:
            raise NodeMissing(why)
        target = self.cache_dir()
        target.mkdir(parents=True, exist_ok=True)
        with open(target.parent / f"{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be installing the same files
            if not (target / STAMP).exists():
                for name in self.files:
                    shutil.copy2(self.shipped / name, target / name)
                done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target,
                                      capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
                if done.returncode != 0:
                    raise NodeMissing(f"`npm ci` in {target} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
                (target / STAMP).write_text("")
        return target

    def locked_versions(self) -> dict[str, str]:
        """Exact versions of the top-level npm packages, from the shipped lock."""
        lock = json.loads((self.shipped / "package-lock.json").read_text())
        direct = lock.get("packages", {}).get("", {}).get("dependencies", {})
        out = {}
        for name in direct:
            version = lock.get("packages", {}).get(f"node_modules/{name}", {}).get("version")
            if version:
                out[name] = version
        return out

    def package_version(self, name: str) -> str | None:
        """The installed version (what runs), else the shipped lock's (what `npm ci` will install)."""
        home = self.installed_dir()
        try:
            if home is not None:
                return json.loads((home / "node_modules" / name / "package.json").read_text())["version"]
            lock = json.loads((self.shipped / "package-lock.json").read_text())
            return lock["packages"][f"node_modules/{name}"]["version"]
        except (OSError, ValueError, KeyError):
            return None
