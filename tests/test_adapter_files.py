"""docs/adapters.md's list of the files a new built-in framework touches, held to the truth: outside the tests,
the prose and the generated outputs, every source file that names a built-in framework (its id as a string, or
its adapter module) is one of the listed files. A per-framework table anywhere else would make adding a
framework touch a file the docs do not name."""

from __future__ import annotations

import os
import re
from pathlib import Path

from loopbench.harness.adapter import BUILTIN, REGISTRY

TIER = "unit"



ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "adapters.md"
# not source: the tests (they use frameworks as sample data), prose, committed outputs, reproductions, examples
SKIP_DIRS = {".git", ".venv", "node_modules", "results", "tests", "docs", "probes", "examples", "published",
             "matrix", "bench", "__pycache__", "build", "dist"}
SOURCE_SUFFIXES = {".py", ".toml", ".yaml", ".yml", ".mjs", ".js", ".json", ".cfg", ".sh"}


def documented_patterns(text: str) -> list[re.Pattern[str]]:
    """Each file of the section's numbered list and of its npm paragraph, a `<placeholder>` matching any name."""
    section = text.split("## A new built-in adapter: the files it touches", 1)[1].split("\nOutputs regenerated", 1)[0]
    paths = re.findall(r"`((?:adapters|harness|loopbench|reports|tests)/[^`\s]*|pyproject\.toml)`", section)
    return [re.compile(re.sub(r"<[a-z]+>", "[^/]+", re.escape(p)) + ("" if p.endswith("/") else "$"))
            for p in paths]


def _files(root: Path) -> list[Path]:
    out: list[Path] = []
    for here, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        out += [Path(here, n) for n in names]
    return out


def naming_files(root: Path, fids: list[str]) -> dict[str, list[str]]:
    """Source file (relative path) -> the built-in frameworks it names."""
    modules = {fid: REGISTRY[fid].partition(":")[0].rsplit(".", 1)[-1] for fid in fids}
    found: dict[str, list[str]] = {}
    for path in _files(root):
        rel = path.relative_to(root)
        if path.suffix not in SOURCE_SUFFIXES and path.name not in ("Makefile", "run"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        named = [fid for fid in fids if f'"{fid}"' in text or f"'{fid}'" in text
                 or f"adapters.{modules[fid]}" in text or f"adapters/{modules[fid]}" in text]
        if named:
            found[rel.as_posix()] = named
    return found


def test_only_the_listed_files_name_a_built_in_framework():
    patterns = documented_patterns(DOC.read_text())
    assert len(patterns) >= 6, patterns
    extra = {f: fids for f, fids in naming_files(ROOT, sorted(BUILTIN)).items()
             if not any(p.match(f) for p in patterns)}
    assert extra == {}, f"name a framework but are not in docs/adapters.md's list: {extra}"


def test_a_table_outside_the_list_is_caught(tmp_path):
    (tmp_path / "loopbench").mkdir()
    (tmp_path / "loopbench" / "names.py").write_text('NAMES = {"langgraph": "LangGraph"}\n')
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "langgraph_agent.py").write_text('id = "langgraph"\n')
    found = naming_files(tmp_path, ["langgraph"])
    patterns = documented_patterns(DOC.read_text())
    assert found == {"loopbench/names.py": ["langgraph"], "adapters/langgraph_agent.py": ["langgraph"]}
    assert [f for f in found if not any(p.match(f) for p in patterns)] == ["loopbench/names.py"]
