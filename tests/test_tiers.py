"""The test tiers themselves (tests/tiers.py): a unit test that starts a process or imports an SDK fails, the
unit modules import no SDK when collected, each test lands in its tier, and a framework's own adapter module,
run alone, asks the shared suite run for that framework only."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import tiers
from tests.conftest import suite_frameworks
from tests.suite_helpers import claim_the_suite_run

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent


def _item(module: Any, fixtures: tuple[str, ...] = (), marks: tuple[str, ...] = ()) -> Any:
    return SimpleNamespace(module=module, fixturenames=fixtures,
                           get_closest_marker=lambda name: name if name in marks else None)


def test_a_unit_test_that_starts_a_process_fails():
    with pytest.raises(tiers.ProcessInUnitTier, match="started a process"):
        with tiers.unit_guard("t", ()):
            subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_unit_test_that_imports_an_sdk_fails(tmp_path, monkeypatch):
    (tmp_path / "fake_framework_sdk.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AssertionError, match=r"imported an SDK \(fake_framework_sdk\)"):
        with tiers.unit_guard("t", ("fake_framework_sdk",)):
            import fake_framework_sdk  # noqa: F401
    sys.modules.pop("fake_framework_sdk", None)


def test_the_sdks_are_the_adapters_facts():
    sdks = tiers.sdk_modules()
    assert {"agents", "claude_agent_sdk", "langgraph", "pydantic_ai", "google.adk"} <= set(sdks)
    assert tiers.is_sdk("google.adk.agents", sdks) and not tiers.is_sdk("google.protobuf", sdks)


def test_each_test_lands_in_its_tier():
    unit, other = SimpleNamespace(TIER="unit"), SimpleNamespace()
    assert tiers.tier_of(_item(unit)) == "unit"
    assert tiers.tier_of(_item(unit, marks=("process",))) == "process"
    assert tiers.tier_of(_item(other)) == "process"
    assert tiers.tier_of(_item(unit, fixtures=("suite_run",))) == "suite"


def test_a_second_worker_that_comes_to_run_the_suite_is_refused():
    """The guard that makes a broken xdist grouping fail make test instead of running the suite twice."""
    uid = f"test-{uuid.uuid4().hex}"
    claim_the_suite_run(uid, "gw0")
    try:
        with pytest.raises(AssertionError, match="started on pytest worker gw0 and again on gw1"):
            claim_the_suite_run(uid, "gw1")
    finally:
        (Path(tempfile.gettempdir()) / f"loopbench-suite-run-{uid}").unlink()
    claim_the_suite_run(None, None)  # no xdist: nothing to claim
    claim_the_suite_run(None, None)


def test_a_frameworks_own_module_runs_only_its_suite():
    mastra, vercel = SimpleNamespace(SUITE_FRAMEWORKS=("mastra",)), SimpleNamespace(SUITE_FRAMEWORKS=("vercel-ai",))
    published = SimpleNamespace()
    assert suite_frameworks([_item(mastra, ("suite_run",)), _item(published)]) == ("mastra",)
    assert suite_frameworks([_item(mastra, ("suite_run",)), _item(vercel, ("suite_run",))]) == ("mastra",
                                                                                                "vercel-ai")
    assert suite_frameworks([_item(mastra, ("suite_run",)), _item(published, ("suite_run",))]) is None


@pytest.mark.process
def test_collecting_the_unit_modules_imports_no_sdk():
    """In a fresh interpreter, as `make check` collects them."""
    modules = sorted(p.stem for p in (ROOT / "tests").glob("test_*.py")
                     if '\nTIER = "unit"\n' in p.read_text(encoding="utf-8"))
    assert len(modules) > 20
    code = ("import sys\n" + "".join(f"import tests.{m}\n" for m in modules) +
            "from tests.tiers import is_sdk, sdk_modules\n"
            "print(sorted(m for m in sys.modules if is_sdk(m, sdk_modules())))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"
