"""The layers, as harness/__init__.py and docs/architecture.md state them: each part of the core imports only from
parts above it (or itself); the core never imports the reports, an adapter module, the command line or an SDK;
the reports never import an adapter, an SDK or the command line; an adapter never imports the reports, and of the
SDKs only its own framework's (its `sdk_modules`). Checked on every import statement, those inside functions
included. The SDK module names are the adapters' facts, from which pyproject's mypy overrides are checked too."""

from __future__ import annotations

import ast
import re
import shutil
import sys
import tomllib
from pathlib import Path

from loopbench.harness.adapter import BUILTIN, adapter_class
from tests.tiers import is_sdk, sdk_modules

TIER = "unit"



ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"
# part of loopbench.harness -> its layer (harness/__init__.py)
LAYERS = {
    "record": 1, "errors": 1, "markers": 1, "own_work": 1, "models": 1, "lazy": 1,
    "scenario": 2,
    "model_server": 3, "ledger": 3, "judge": 3, "results": 3, "adapter": 3,
    "run": 4,
}
SDKS = sdk_modules()
# what an adapter may import besides the core and its own SDKs: the standard library and loopbench's own
# dependencies
ADAPTER_ALLOWED = ("pydantic", "httpx", "yaml")


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def _part(harness: Path, path: Path) -> str:
    rel = path.relative_to(harness)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _core_violations(harness: Path) -> list[str]:
    bad = []
    for path in harness.rglob("*.py"):
        if path.parent == harness and path.name == "__init__.py":
            continue
        mine = _part(harness, path)
        for name in _imports(path):
            where = f"{path.relative_to(harness.parent)}: {name}"
            if name.startswith("loopbench.harness."):
                other = name.split(".")[2]
                if other in LAYERS and other != mine and LAYERS[other] >= LAYERS[mine]:
                    bad.append(f"{where} (layer {LAYERS[mine]} importing layer {LAYERS[other]})")
            elif name.startswith("loopbench.") and not name.startswith("loopbench.harness") and \
                    name != "loopbench.__version__":  # the distribution's version, from the package root
                bad.append(f"{where} (the core names no report, adapter or command module)")
            elif is_sdk(name, SDKS):
                bad.append(f"{where} (the core never imports a framework SDK)")
    return bad


def test_every_part_of_the_core_has_a_layer():
    parts = {_part(HARNESS, p) for p in HARNESS.rglob("*.py") if p.name != "__init__.py" or p.parent != HARNESS}
    assert parts == set(LAYERS)


def test_the_core_imports_only_downward():
    assert _core_violations(HARNESS) == []


def test_a_wrong_import_is_caught(tmp_path):
    """The check itself can fail: in a copy of the core, a layer-2 module importing the runner is named."""
    copy = tmp_path / "harness"
    shutil.copytree(HARNESS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "scenario" / "zz_layer_probe.py").write_text("from loopbench.harness.run.runner import RunPlan\n")
    (copy / "record_probe.py").write_text("import langgraph\n")
    bad = "\n".join(_core_violations(copy))
    assert "zz_layer_probe.py: loopbench.harness.run.runner (layer 2 importing layer 4)" in bad
    assert "record_probe.py: langgraph (the core never imports a framework SDK)" in bad


def test_the_reports_import_no_adapter_sdk_or_command_line():
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in (ROOT / "reports").rglob("*.py") for n in _imports(p)
           if n.startswith(("loopbench.adapters", "loopbench.cli", "loopbench.commands")) or is_sdk(n, SDKS)]
    assert bad == []


def _adapter_violations(path: Path, own: tuple[str, ...]) -> list[str]:
    bad = []
    for name in _imports(path):
        top = name.split(".")[0]
        if name.startswith(("loopbench.reports", "loopbench.cli", "loopbench.commands", "loopbench.bench",
                            "loopbench.matrix")):
            bad.append(f"{path.name}: {name} (an adapter never imports the reports or the command line)")
        elif top in ("loopbench", "__future__") or top in sys.stdlib_module_names or top in ADAPTER_ALLOWED:
            continue
        elif not is_sdk(name, own):
            bad.append(f"{path.name}: {name} (not one of its framework's sdk_modules {own})")
    return bad


def test_each_adapter_imports_only_its_own_sdk():
    bad = []
    for fid in sorted(BUILTIN):
        cls = adapter_class(fid)
        module = sys.modules[cls.__module__]
        bad += _adapter_violations(Path(module.__file__ or ""), cls.sdk_modules)
    shared = [ROOT / "adapters" / "kit.py", ROOT / "adapters" / "loop_command.py", *(ROOT / "adapters" / "node").glob("*.py")]
    for path in shared:  # the adapters' shared glue (the Node piece included): no SDK at all
        bad += _adapter_violations(path, ())
    assert bad == []


def test_an_adapter_importing_another_sdk_is_caught(tmp_path):
    probe = tmp_path / "probe_adapter.py"
    probe.write_text("import json\nfrom loopbench.harness.adapter import Adapter\n\ndef f():\n    import langgraph\n")
    assert _adapter_violations(probe, ("agents",)) == [
        "probe_adapter.py: langgraph (not one of its framework's sdk_modules ('agents',))"]
    assert _adapter_violations(probe, ("langgraph",)) == []


def test_mypy_skips_exactly_the_sdks_the_adapters_declare():
    """pyproject's mypy override (found, not analysed) covers each declared SDK module (the module itself, or
    `module.*`, which is it and its submodules) and names nothing else."""
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    skipped = {m for o in overrides if o.get("follow_imports") == "skip" for m in o["module"]}
    assert [m for m in SDKS if not {m, f"{m}.*"} & skipped] == []
    assert [p for p in skipped if not is_sdk(p.removesuffix(".*"), SDKS)] == []


def test_the_architecture_page_states_the_core_layers():
    """docs/architecture.md's layer table names each part of the core with the layer this test checks."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| (\d) \| ([^|]+) \|", text, re.M)
    stated = {part.strip("` /"): int(n) for n, cell in rows for part in cell.split(",")}
    assert stated == LAYERS
