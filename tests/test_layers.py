"""The core's layers, as harness/__init__.py states them: each part imports only from parts above it (or
itself); the core never imports the reports, an adapter module, the command line or a framework SDK; an
adapter never imports the reports. Checked on every import statement, those inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "harness"
# part of loopbench.harness -> its layer (harness/__init__.py)
LAYERS = {
    "record": 1, "errors": 1, "markers": 1, "own_work": 1, "models": 1,
    "scenario": 2,
    "model_server": 3, "ledger": 3, "judge": 3, "results": 3, "adapter": 3,
    "run": 4,
}
SDKS = ("agents", "openai", "anthropic", "claude_agent_sdk", "langgraph", "langchain", "langchain_core",
        "langchain_openai", "mcp", "pydantic_ai", "google")


def _imports(path: Path) -> list[str]:
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


def _part(path: Path) -> str:
    rel = path.relative_to(HARNESS)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_part_of_the_core_has_a_layer():
    parts = {_part(p) for p in HARNESS.rglob("*.py") if p.name != "__init__.py" or p.parent != HARNESS}
    assert parts == set(LAYERS)


def test_the_core_imports_only_downward():
    bad = []
    for path in HARNESS.rglob("*.py"):
        if path.parent == HARNESS and path.name == "__init__.py":
            continue
        mine = _part(path)
        for name in _imports(path):
            where = f"{path.relative_to(ROOT)}: {name}"
            if name.startswith("loopbench.harness."):
                other = name.split(".")[2]
                if other in LAYERS and other != mine and LAYERS[other] >= LAYERS[mine]:
                    bad.append(f"{where} (layer {LAYERS[mine]} importing layer {LAYERS[other]})")
            elif name.startswith("loopbench.") and not name.startswith("loopbench.harness") and \
                    name != "loopbench.__version__":  # the distribution's version, from the package root
                bad.append(f"{where} (the core names no report, adapter or command module)")
            elif name.split(".")[0] in SDKS:
                bad.append(f"{where} (the core never imports a framework SDK)")
    assert bad == []


def test_adapters_never_import_the_reports_or_the_command_line():
    bad = [f"{p.relative_to(ROOT)}: {n}" for p in (ROOT / "adapters").glob("*.py") for n in _imports(p)
           if n.startswith(("loopbench.reports", "loopbench.cli", "loopbench.bench", "loopbench.matrix"))]
    assert bad == []


def test_a_wrong_import_is_caught(tmp_path):
    """The check itself can fail: a layer-2 module importing the runner is named."""
    fake = HARNESS / "scenario" / "zz_layer_probe.py"
    fake.write_text("from loopbench.harness.run.runner import RunPlan\n")
    try:
        try:
            test_the_core_imports_only_downward()
        except AssertionError as exc:
            assert "zz_layer_probe.py: loopbench.harness.run.runner" in str(exc)
        else:
            raise AssertionError("the layer check let a layer-2 module import layer 4")
    finally:
        fake.unlink()
