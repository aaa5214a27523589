"""What the offline tests read, made by `make test` inside the checkout (never a global cache).

Three tests install packages with no network: the wheel test (`uv build` + `uv pip install --offline`), the
external adapter test (`uv pip install --offline`) and the version-matrix test (`uv pip compile --offline` of two
openai-agents releases). What an offline resolve finds depends on what the cache holds, so the cache is the
checkout's own (`.venv/cache/uv`, and npm's `.venv/cache/npm`, both exported by the Makefile for every command
it runs) and this module fills it deterministically: it runs each of those installs once *online*, exactly as
the test later runs it offline, so the entries a resolve needs (index pages and metadata, not only the wheels a
sync leaves) are there. `make test` runs it (`python -m tests.offline_fixtures`) before pytest; the conftest
points every test at the same caches and each offline test checks the stamp first, so a missing fill is said in
one line instead of as a resolver error.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
CACHES = {"UV_CACHE_DIR": VENV / "cache" / "uv", "npm_config_cache": VENV / "cache" / "npm"}
UV = VENV / "bin" / "uv"
STAMP = VENV / ".offline-fixtures"
EXTERNAL_ADAPTER = ROOT / "examples" / "external_adapter"
LOCK = ROOT / "requirements.lock"
MATRIX_OTHER_RELEASE = "0.23.1"  # the openai-agents release the matrix test runs beside the locked one
MATRIX_CACHE = VENV / "matrix-fixtures"  # the online build's environments (the test builds its own offline)


def locked_version(package: str) -> str:
    found = re.search(rf"^{re.escape(package)}==(\S+)$", LOCK.read_text(), re.MULTILINE)
    if found is None:
        raise LookupError(f"{package} is not pinned in {LOCK.name}")
    return found.group(1)


def matrix_releases() -> list[str]:
    return [MATRIX_OTHER_RELEASE, locked_version("openai-agents")]


def _key() -> str:
    """What the fill depends on: the locks, the packaging files and this recipe."""
    parts = [LOCK, ROOT / "pyproject.toml", EXTERNAL_ADAPTER / "pyproject.toml", Path(__file__)]
    return hashlib.sha256(b"".join(p.read_bytes() for p in parts)).hexdigest()[:16]


def use_project_caches(env: dict[str, str] | os._Environ[str]) -> None:
    """Point uv and npm at the checkout's caches (the tests' and their children's)."""
    for name, path in CACHES.items():
        env[name] = str(path)


def missing() -> str | None:
    """Why the offline tests cannot run yet (None: the fill is there and current)."""
    if not UV.exists():
        return f"{UV} is missing: `make install` puts uv in the project's venv"
    if not STAMP.exists() or STAMP.read_text().strip() != _key():
        return f"the offline fixtures are missing or stale ({STAMP.name}): `make test` fills them"
    return None


def tracked_copy(dest: Path) -> Path:
    """The checkout's tracked files copied to `dest`, as a clean clone has them (no build/, no node_modules)."""
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in names.splitlines():
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def _run(cmd: list[str], **kw: object) -> None:
    print("offline fixtures:", " ".join(map(str, cmd[:6])), "…", flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def fill() -> None:
    """Run, online, every install the offline tests repeat; then write the stamp."""
    use_project_caches(os.environ)
    with tempfile.TemporaryDirectory(prefix="loopbench-fixtures-") as tmp_s:
        tmp = Path(tmp_s)
        # tests/test_packaging.py: the wheel (its build backend) and its [openai-agents] install beside the lock
        _run([str(UV), "build", "-q", "--wheel", "--out-dir", str(tmp / "dist"), str(tracked_copy(tmp / "src"))])
        (wheel,) = (tmp / "dist").glob("loopbench-*.whl")
        _run([str(UV), "venv", "-q", "--python", sys.executable, str(tmp / "venv")])
        _run([str(UV), "pip", "install", "-q", "--python", str(tmp / "venv" / "bin" / "python"),
              f"{wheel}[openai-agents]", "-c", str(LOCK)])
        # tests/test_external_adapter.py: the example adapter package (its build backend)
        _run([str(UV), "pip", "install", "-q", "--no-deps", "--python", sys.executable, "--target",
              str(tmp / "plugin"), str(EXTERNAL_ADAPTER)])
    # tests/test_matrix.py: both releases' environments, resolved as the offline test resolves them
    shutil.rmtree(MATRIX_CACHE, ignore_errors=True)
    env = {**os.environ, "LOOPBENCH_CACHE": str(MATRIX_CACHE), "LOOPBENCH_MATRIX_HOLD": "0"}
    code = ("import sys; from loopbench.matrix import VersionSet, build\n"
            "for v in sys.argv[1:]: build(VersionSet('openai-agents', v))")
    _run([sys.executable, "-c", code, *matrix_releases()], env=env)
    STAMP.write_text(_key() + "\n")


if __name__ == "__main__":
    if missing() is None:
        print("offline fixtures: current", flush=True)
    else:
        fill()
