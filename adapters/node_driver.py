"""Shared plumbing of the npm frameworks' adapters (vercel-ai, mastra): where a shipped Node project lives,
installing its locked npm dependencies on first use (`NodeHome`), and the facts an npm adapter reads from it —
versions, availability, the bench's plain command (`NodeAdapter`).

A Node adapter ships a Node project as package data (its driver, `package.json`, `package-lock.json`). Node
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
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from loopbench.harness.adapter import Adapter
from loopbench.harness.errors import LoopbenchError

STAMP = ".installed"  # written after a complete `npm ci` (the Makefile writes the same stamp)
NPM_TIMEOUT_S = 600


class NodeMissing(LoopbenchError):
    """Node.js / npm is not on PATH, or `npm ci` failed: the driver cannot be installed."""


@dataclass(frozen=True)
class NodeHome:
    """One shipped Node project and where its installed copy is."""

    shipped: Path  # the project as shipped (package data)
    files: tuple[str, ...]  # what a copy needs (the cache key is their content)
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


class NodeAdapter(Adapter):
    """What every npm framework's adapter reads from its Node project, written once: versions (installed, else
    the shipped lock's), availability, and the bench's plain command. A subclass names its project in
    `node_home` (a function, so tests can point the project elsewhere) and `npm_label` (for messages)."""

    npm_label: ClassVar[str]  # the framework's npm package as a message names it

    @classmethod
    def node_home(cls) -> NodeHome:
        raise NotImplementedError

    @classmethod
    def version(cls) -> str | None:
        return cls.node_home().package_version(cls.distribution)

    @classmethod
    def package_versions(cls) -> dict[str, str]:
        home = cls.node_home()
        return {n: v for n in (cls.distribution, *cls.packages) if (v := home.package_version(n)) is not None}

    @classmethod
    def unavailable_reason(cls) -> str | None:
        home = cls.node_home()
        if (why := home.missing_reason()) is not None:
            return why
        version = cls.version()
        if version is None:
            return f"the npm package {cls.npm_label} is neither installed nor in {home.shipped / 'package-lock.json'}"
        parsed = tuple(int(p) for p in re.findall(r"\d+", version)[:3])
        if parsed < cls.min_version:
            need = ".".join(map(str, cls.min_version))
            return f"{cls.distribution} {version} is older than the {need} this adapter needs"
        return None

    @classmethod
    def plain_command(cls, script: Path, work: Path) -> list[str]:
        """The plain script beside the locked node_modules, as a user's project has it, on the locked Node."""
        home = cls.node_home().ensure_installed()
        here = work / f"plain-{cls.id}"
        here.mkdir(parents=True)
        (here / "plain.mjs").write_text(script.read_text())
        (here / "node_modules").symlink_to(home / "node_modules")
        return [str(home / "node_modules" / ".bin" / "node"), str(here / "plain.mjs")]
