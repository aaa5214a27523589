"""The version matrix: the same suite across framework releases, each in an isolated environment built once
and cached, merged into one results set whose records carry their versions (`loopbench matrix`).

A version set is one framework package at one version (`--versions openai-agents=0.22.0,0.24.0` gives two).
The packages are the built-in adapters' `distribution`s, and everything the matrix knows about one comes from
its adapter class (harness/adapter.py: `package_index`, `extra`, `node_project`, `companions`). Its environment:
- a PyPI package: a venv whose lock is this project's `requirements.lock` re-resolved by uv for the adapter's
  pyproject extra with that one package overridden (`uv pip compile --override`, the old lock as preferences,
  so only what the version needs moves), then loopbench itself installed editable;
- an npm package: a copy of the adapter's Node project with `npm install PKG@VERSION` (its lock re-resolved the
  same way), used through the project's environment variable (`LOOPBENCH_NODE_DIR`) by the project's own venv.
The adapter's companions are held to what was published by the release's day (online).
Environments live under `$LOOPBENCH_CACHE/matrix/` (else `~/.cache/loopbench/matrix/`), keyed by the version
set and the content of the locks, and are reused by later runs. Each version set's runs are one ordinary
`loopbench run` in its environment (the runner's slots and warm workers), restricted to the framework that
package belongs to. A version that cannot be installed, or that its adapter cannot drive, is reported as
unavailable with the reason; the matrix goes on.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from loopbench.harness.adapter import BUILTIN_ADAPTERS, Adapter, adapter_class
from loopbench.harness.errors import BadInput, InputProblem

ROOT = Path(__file__).resolve().parent.parent  # a checkout (the matrix builds environments from its locks)
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
BUILD_TIMEOUT_S = 900
READY = ".ready"
RECIPE = b"5"  # how an environment is built: part of its cache key (5: companions held to the release's date)
OFFLINE_ENV = "LOOPBENCH_MATRIX_OFFLINE"  # "1": build from the uv and npm caches only (the tests)
HOLD_ENV = "LOOPBENCH_MATRIX_HOLD"  # "0": companions as locked, not held to the release's date (the offline
# test's resolution, which `make matrix-fixtures` repeats online to fill the cache with exactly that)

VERSION_PATTERN = re.compile(r"^[0-9][0-9A-Za-z.+-]*$")


@cache
def frameworks() -> dict[str, type[Adapter]]:
    """The package each built-in framework's releases are named by (its adapter's `distribution`) -> its adapter
    class (the default variant), in the registry's order. Plug-in adapters are not in the matrix: an environment
    is built from this project's pyproject extras and Node projects."""
    found = (adapter_class(fid) for fid in BUILTIN_ADAPTERS)
    return {cls.distribution: cls for cls in found if cls.extra is not None or cls.node_project is not None}


@dataclass(frozen=True)
class VersionSet:
    package: str
    version: str

    @property
    def adapter(self) -> type[Adapter]:
        return frameworks()[self.package]

    @property
    def framework(self) -> str:
        return self.adapter.id

    @property
    def node(self) -> bool:
        return self.adapter.package_index == "npm"

    @property
    def id(self) -> str:
        return f"{self.package}-{self.version}"


def parse_versions(specs: list[str], source: str = "--versions") -> list[VersionSet]:
    """`PKG=V1,V2` specs as version sets; BadInput naming each bad one."""
    out: list[VersionSet] = []
    problems: list[InputProblem] = []
    for spec in specs:
        package, sep, versions = spec.partition("=")
        package = package.strip()
        if not sep or package not in frameworks():
            problems.append(InputProblem(source, spec, f"expected PKG=V1,V2 with PKG one of {', '.join(frameworks())}"))
            continue
        for v in filter(None, (x.strip() for x in versions.split(","))):
            if not VERSION_PATTERN.match(v):
                problems.append(InputProblem(source, spec, f"{v!r} is not a version"))
            elif VersionSet(package, v) not in out:
                out.append(VersionSet(package, v))
    if problems:
        raise BadInput(problems)
    if not out:
        raise BadInput([InputProblem(source, "", "no version given")])
    return out


def read_versions_file(path: Path) -> list[str]:
    """The file form: a YAML mapping `package: [versions]`, as `PKG=V1,V2` specs."""
    from loopbench.harness.scenario.yaml_input import InputError, read_yaml

    try:
        data = read_yaml(path)
    except (OSError, InputError) as exc:
        raise BadInput([InputProblem(str(path), "", f"cannot read: {exc}")]) from None
    if not isinstance(data, dict):
        raise BadInput([InputProblem(str(path), "", "must be a mapping: package -> list of versions")])
    return [f"{k}={','.join(str(v) for v in (vs if isinstance(vs, list) else [vs]))}" for k, vs in data.items()]


def cache_root() -> Path:
    root = os.environ.get("LOOPBENCH_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "loopbench")
    return Path(root) / "matrix"


def _digest(*paths: Path) -> str:
    # the checkout is in the key too: an environment runs the adapters of the checkout it was built from
    return hashlib.sha256(RECIPE + str(ROOT).encode() + b"".join(p.read_bytes() for p in paths)).hexdigest()[:12]


@dataclass(frozen=True)
class Environment:
    vs: VersionSet
    dir: Path
    python: Path  # the interpreter that runs loopbench for this version set
    env: dict[str, str]  # what the runs need beside it (the Node driver directory)
    reused: bool


class Unavailable(Exception):
    """A version set whose environment cannot be built (or whose adapter cannot drive it): the reason."""


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-6:]
        raise Unavailable(f"`{' '.join(cmd[:4])} …` failed: " + " / ".join(tail))
    return done


def _uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if not found:
        raise Unavailable("uv is not installed (make install puts it in .venv/bin)")
    return found


def _offline() -> list[str]:
    return ["--offline"] if os.environ.get(OFFLINE_ENV) == "1" else []


def release_date(vs: VersionSet) -> str | None:
    """The day after the release was published (PyPI or npm), or None offline, with LOOPBENCH_MATRIX_HOLD=0, or
    when the registry does not say."""
    if _offline() or os.environ.get(HOLD_ENV) == "0":
        return None
    import datetime as dt

    import httpx

    url = f"https://registry.npmjs.org/{vs.package}" if vs.node else f"https://pypi.org/pypi/{vs.package}/json"
    try:
        data = httpx.get(url, timeout=60, follow_redirects=True).raise_for_status().json()
        stamp = data["time"][vs.version] if vs.node else data["releases"][vs.version][0]["upload_time_iso_8601"]
    except (httpx.HTTPError, KeyError, IndexError, ValueError):
        return None
    day = dt.date.fromisoformat(stamp[:10]) + dt.timedelta(days=1)
    return day.isoformat()


def npm_dependencies(locked: dict[str, str], cls: type[Adapter], version: str) -> dict[str, str]:
    """An npm framework's manifest dependencies for one release, its companions held by date: the package at
    that version, each companion at the newest published (npm's --before), Node itself within its locked major
    (the runtime is not what the matrix varies); anything else as locked."""
    runtime = cls.node_project.runtime if cls.node_project else None
    return {p: version if p == cls.distribution else f"^{str(v).split('.')[0]}" if p == runtime
            else "*" if p in cls.companions else v for p, v in locked.items()}


def _same(have: Any, bound: str) -> bool:
    """`1.2.3` exactly, or a partial / wildcard version (`1`, `1.x`, `1.2.*`) by its fixed parts."""
    fixed = [int(p) for p in bound.split("-")[0].split(".") if p not in ("x", "X", "*")]
    return tuple(have.release[:len(fixed)]) == tuple(fixed) + (0,) * (len(fixed) - len(have.release[:len(fixed)]))


def _admits(spec: str, version: str) -> bool:
    """Whether an npm range (`>=1.68.0-0 <2.0.0-0`, `^1.2.0`, `1.x`, `*`, alternatives joined by `||`) admits a
    release version: the forms peer ranges use."""
    from packaging.version import InvalidVersion, Version

    def v(text: str) -> Version:
        return Version(text.split("-")[0].replace(".x", ".0").replace(".*", ".0") or "0")

    try:
        have = v(version)
        for alternative in spec.split("||"):
            ok = True
            for c in alternative.split():
                op = re.match(r"^(>=|<=|>|<|=|\^|~)?(.*)$", c)
                assert op is not None
                kind, bound = op.group(1) or "=", op.group(2)
                if bound in ("*", "x", ""):
                    continue
                b = v(bound)
                caret = Version(f"{b.major + 1}") if b.major else Version(f"0.{b.minor + 1}")
                ok &= {">=": have >= b, "<=": have <= b, ">": have > b, "<": have < b, "^": b <= have < caret,
                       "~": b <= have < Version(f"{b.major}.{b.minor + 1}"),
                       "=": _same(have, bound)}[kind]
            if ok:
                return True
    except InvalidVersion:
        return False
    return False


def npm_companion(package: str, locked: str, framework: str, version: str, day: str) -> str | None:
    """The companion release a framework release runs beside: the newest of `package` in its locked major,
    published before `day`, whose peer range for the framework admits `version`. npm's `--before` alone takes
    the newest by date, which can refuse the framework when a registry's dates are out of release order
    (@mastra/libsql 0.16.4, a peer of @mastra/core 0.2x, is dated after 1.x releases). None: the registry does
    not say (the caller falls back to `--before`)."""
    import httpx
    from packaging.version import InvalidVersion, Version

    try:
        data = httpx.get(f"https://registry.npmjs.org/{package}", timeout=60).raise_for_status().json()
    except (httpx.HTTPError, ValueError):
        return None
    major = locked.lstrip("^~").split(".")[0]
    fits = []
    for v, meta in (data.get("versions") or {}).items():
        stamp = (data.get("time") or {}).get(v, "")
        if "-" in v or v.split(".")[0] != major or not stamp or stamp[:10] >= day:
            continue
        peer = (meta.get("peerDependencies") or {}).get(framework)
        if peer is None or _admits(peer, version):
            try:
                fits.append((Version(v), v))
            except InvalidVersion:
                continue
    return max(fits)[1] if fits else None


def _build_npm(vs: VersionSet) -> Environment:
    cls = vs.adapter
    project = cls.node_project
    assert project is not None, f"{cls.id} is an npm framework without a node_project"
    home = cache_root() / f"{vs.id}-{_digest(*(project.dir / f for f in project.files))}"
    env = {project.dir_env: str(home)}
    if (home / READY).exists():
        return Environment(vs, home, Path(sys.executable), env, reused=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for name in project.files:
        shutil.copy2(project.dir / name, home / name)
    day = release_date(vs)
    if day is None:  # offline: the locked companions
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *_offline(),
              f"{vs.package}@{vs.version}"], cwd=home)
    else:  # the companions as the newest published by the release's date
        manifest = json.loads((home / "package.json").read_text())
        locked = dict(manifest["dependencies"])
        manifest["dependencies"] = npm_dependencies(locked, cls, vs.version)
        for pkg in cls.companions:  # pinned where the registry says which one fits the release
            if pkg in locked and (pin := npm_companion(pkg, locked[pkg], vs.package, vs.version, day)):
                manifest["dependencies"][pkg] = pin
        (home / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
        (home / "package-lock.json").unlink()
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", f"--before={day}"], cwd=home)
    (home / "companions.txt").write_text(f"published before {day}\n" if day else "as locked\n")
    (home / READY).write_text(vs.version)
    return Environment(vs, home, Path(sys.executable), env, reused=False)


def _extras_of(vs: VersionSet) -> str:
    """The package's own extras as the adapter's pyproject extra asks for them (`[openai,anthropic]` for
    pydantic-ai-slim): an override replaces the whole requirement, extras included, so it must restate them."""
    import tomllib

    from packaging.requirements import Requirement

    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"].get(str(vs.adapter.extra), [])
    for line in extras:
        req = Requirement(line)
        if req.name == vs.package and req.extras:
            return f"[{','.join(sorted(req.extras))}]"
    return ""


def build(vs: VersionSet) -> Environment:
    """The version set's environment, built once (reused when its stamp is there)."""
    if vs.node:
        return _build_npm(vs)
    home = cache_root() / f"{vs.id}-{_digest(LOCK, PYPROJECT)}"
    python = home / "venv" / "bin" / "python"
    if (home / READY).exists() and python.exists():
        return Environment(vs, home, python, {}, reused=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    uv = _uv()
    (home / "override.txt").write_text(f"{vs.package}{_extras_of(vs)}=={vs.version}\n")
    shutil.copy2(LOCK, home / "requirements.lock")  # the preferences: only what the version needs moves
    extra, companions = vs.adapter.extra, vs.adapter.companions
    held: list[str] = []
    if (day := release_date(vs)) is not None:  # the companions as they were then
        held = [x for pkg in companions for x in ("--exclude-newer-package", f"{pkg}={day}")]
        for pkg in companions:  # no preference for today's companion versions
            held += ["--upgrade-package", pkg]
    _run([uv, "pip", "compile", "-q", *_offline(), str(PYPROJECT), "--extra", str(extra), "--python-version", "3.11",
          "--override", str(home / "override.txt"), *held, "-o", str(home / "requirements.lock")])
    _run([uv, "venv", "-q", "--python", sys.executable, str(home / "venv")])
    _run([uv, "pip", "sync", "-q", *_offline(), "--python", str(python), str(home / "requirements.lock")])
    _run([uv, "pip", "install", "-q", *_offline(), "--python", str(python), "--no-deps", "-e", str(ROOT)])
    (home / READY).write_text(vs.version)
    return Environment(vs, home, python, {}, reused=False)


def availability(env: Environment) -> str | None:
    """Why the adapter cannot drive this environment's version (None: it can), as `loopbench list` says."""
    done = subprocess.run([str(env.python), "-m", "loopbench.cli", "list", "--json"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **env.env})
    if done.returncode != 0:
        return f"loopbench list failed in the environment: {done.stderr.strip()[-400:]}"
    listed = {f["id"]: f for f in json.loads(done.stdout)["frameworks"]}
    info = listed.get(env.vs.framework)
    if info is None:
        return f"{env.vs.framework} is not registered in the environment"
    if info["version"] != env.vs.version:
        return f"the environment has {env.vs.package} {info['version']}, not {env.vs.version}"
    return info["unavailable"]


@dataclass
class SetResult:
    vs: VersionSet
    status: str  # "ran" | "unavailable" | "error" (a Ray task that failed on every attempt)
    reason: str | None = None
    runs: int = 0
    reused: bool = False
    attempts: list[str] | None = None  # `loopbench matrix --ray`: the node of each attempt, in order


def prepare(vs: VersionSet) -> Environment:
    """The version set's environment, built or reused, that its adapter can drive; Unavailable says why not."""
    try:
        env = build(vs)
        why = availability(env)
    except subprocess.TimeoutExpired as exc:
        raise Unavailable(f"`{' '.join(map(str, exc.cmd[:4]))} …` took longer than {exc.timeout:.0f} s") from None
    if why:
        raise Unavailable(why)
    return env


def run_command(env: Environment, args: list[str], target: Path) -> list[str]:
    """The `loopbench run` of a version set in its environment, into `target`."""
    return [str(env.python), "-m", "loopbench.cli", "run", *args, "--out", str(target)]


def run_matrix(sets: list[VersionSet], out: Path, run_args: Callable[[VersionSet], list[str]]) -> list[SetResult]:
    """Build (or reuse) each version set's environment, run the suite in it into `out/runs/<set id>/` (one
    `loopbench run` with `run_args(set)`), and merge every record into `out/results.jsonl`; `out/sets.json`
    says what ran and what could not."""
    out.mkdir(parents=True, exist_ok=True)
    results: list[SetResult] = []
    for vs in sets:
        print(f"matrix: {vs.package} {vs.version}: preparing its environment", flush=True)
        try:
            env = prepare(vs)
        except Unavailable as exc:
            print(f"matrix: {vs.package} {vs.version}: unavailable: {exc}", flush=True)
            results.append(SetResult(vs, "unavailable", str(exc)))
            continue
        target = out / "runs" / vs.id
        print(f"matrix: {vs.package} {vs.version}: running in its {'cached' if env.reused else 'new'} environment "
              f"{env.dir}", flush=True)
        done = subprocess.run([*run_command(env, run_args(vs), target), "--force"], env={**os.environ, **env.env},
                              timeout=None)
        runs = len(set_lines(out, vs))
        results.append(SetResult(vs, "ran", runs=runs, reused=env.reused) if runs else
                       SetResult(vs, "unavailable", f"its run recorded nothing (exit {done.returncode})",
                                 reused=env.reused))
    write_merged(out, results)
    return results


def set_lines(out: Path, vs: VersionSet) -> list[str]:
    """The complete record lines of one version set's results, `out/runs/<set id>/results.jsonl`."""
    from loopbench.harness.results.store import read_lines

    path = out / "runs" / vs.id / "results.jsonl"
    return [x for x in read_lines(path).lines if x.strip()] if path.exists() else []


def write_merged(out: Path, results: list[SetResult]) -> None:
    """`out/results.jsonl` (every set's records, in the sets' order) and `out/sets.json` (what ran, and why
    not)."""
    merged = [x for r in results for x in set_lines(out, r.vs)]
    (out / "results.jsonl").write_text("".join(x + "\n" for x in merged))
    (out / "sets.json").write_text(json.dumps([
        {"package": r.vs.package, "version": r.vs.version, "framework": r.vs.framework, "status": r.status,
         "reason": r.reason, "runs": r.runs, "reused_environment": r.reused,
         **({"attempts": r.attempts} if r.attempts is not None else {})} for r in results], indent=2) + "\n")
