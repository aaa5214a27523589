"""The adapter contract, for every registered built-in adapter (parametrized from the registry: a new built-in is
checked without naming it here). Without a run: each variant declares its capabilities, what it is (`about`) and a
mechanism for every intent (or why not); each framework declares its facts — its pyproject extra or Node project,
the package the version matrix varies, its companions (installed, in the lock or the driver's package.json), its
plain script for the bench (shipped) — and the matrix and the bench read them from it. From the shared full-suite
run (marked `suite`): every variant recorded every scenario, its records carry what its class declares, and
nothing is made up (a count the framework did not report is null, never 0)."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from fnmatch import fnmatch
from importlib import metadata, resources
from pathlib import Path
from typing import get_args

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from loopbench.bench import plain_script_path, plain_scripts
from loopbench.harness.adapter import BUILTIN, REGISTRY, Adapter, adapter_class
from loopbench.harness.judge.counters import reported_totals
from loopbench.harness.models import Provider, model_for, provider_of
from loopbench.harness.record import SUMMED_COUNTERS, Capabilities, Intent, NeutralLimit, RunRecord
from loopbench.harness.scenario import load_scenarios
from loopbench.harness.scenario.model import MAIN_AGENT
from loopbench.matrix import frameworks as matrix_frameworks
from loopbench.reports.claims import load_claims
from tests.suite_helpers import suite_records

TIER = "unit"

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOCKED = {canonicalize_name(m.group(1)): m.group(2)
          for m in re.finditer(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "requirements.lock").read_text(), re.M)}
INTENTS = set(get_args(Intent))
LIMITS = set(get_args(NeutralLimit))
# what a variant may not change: the framework's facts are one per framework
FACTS = ("id", "distribution", "package_index", "extra", "node_project", "companions", "plain_script", "packages",
         "min_version")

FRAMEWORKS = [fid for fid in REGISTRY if fid in BUILTIN]
VARIANTS = [(fid, v) for fid in FRAMEWORKS for v in adapter_class(fid).idioms()]
VARIANT_IDS = [f"{fid}:{v}" for fid, v in VARIANTS]


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version)[:3])


def _npm_manifest(cls: type[Adapter]) -> tuple[dict[str, str], dict[str, str]]:
    """The Node project's package.json dependencies, and the versions its lock pins."""
    assert cls.node_project is not None
    deps = json.loads((cls.node_project.dir / "package.json").read_text())["dependencies"]
    lock = json.loads((cls.node_project.dir / "package-lock.json").read_text())["packages"]
    return deps, {k.removeprefix("node_modules/"): v["version"] for k, v in lock.items()
                  if k.startswith("node_modules/") and "version" in v}


def test_the_registry_has_built_in_adapters():
    assert FRAMEWORKS and set(FRAMEWORKS) == set(BUILTIN)


# ---------------------------------------------------------------- each variant
@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_each_variant_declares_capabilities_about_and_the_framework_facts(framework, variant):
    cls = adapter_class(framework, variant)
    default = adapter_class(framework)
    assert (cls.id, cls.variant, default.variant) == (framework, variant, "default")
    assert isinstance(cls.capabilities, Capabilities)
    assert cls.capabilities.native_limits <= LIMITS
    assert cls.capabilities.step_unit and cls.capabilities.deny
    # what the idiom is, said by the class itself (not inherited), distinct from its siblings'
    assert "about" in cls.__dict__ and isinstance(cls.about, str) and cls.about.strip()
    siblings = [c.about for v, c in default.idioms().items() if v != variant]
    assert cls.about not in siblings
    # a variant is an idiom of the same framework: the framework's facts are the default class's
    assert {f: getattr(cls, f) for f in FACTS} == {f: getattr(default, f) for f in FACTS}


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_each_variant_names_its_model_class_and_the_provider_whose_model_it_sends(framework, variant):
    """docs/decisions.md "Each framework's own model class": the class is the framework's own (its import path or
    the name its docs give it), and the model id comes from the one table (harness/models.py), never the adapter."""
    cls = adapter_class(framework, variant)
    assert isinstance(cls.model_class, str) and cls.model_class.strip()
    assert cls.model_provider in get_args(Provider)
    for scenario in load_scenarios():
        assert cls.model_id(scenario) == model_for(scenario.model.id, cls.model_provider)
        assert provider_of(cls.model_id(scenario)) == cls.model_provider


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_the_mechanism_table_covers_every_intent(framework, variant):
    """Every intent has the native mechanism the idiom uses, or `unsupported: why`."""
    table = adapter_class(framework, variant).mechanism_table
    assert set(table) == INTENTS, sorted(INTENTS ^ set(table))
    for intent, how in table.items():
        assert isinstance(how, str) and how.strip(), intent
        if how.startswith("unsupported"):
            assert len(how.removeprefix("unsupported").strip(" :")) > 10, (intent, "says why")


# ---------------------------------------------------------------- each framework's facts
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_framework_package_and_its_extra_or_node_project(framework):
    cls = adapter_class(framework)
    assert cls.package_index in ("pypi", "npm")
    if cls.package_index == "pypi":
        assert cls.node_project is None
        extras = PYPROJECT["project"]["optional-dependencies"]
        assert cls.extra in extras, f"pyproject.toml has no extra {cls.extra!r}"
        assert canonicalize_name(cls.distribution) in {canonicalize_name(Requirement(r).name)
                                                       for r in extras[cls.extra]}
        (everything,) = extras["all"]
        assert cls.extra in Requirement(everything).extras, "`all` installs every framework's extra"
        locked = LOCKED.get(canonicalize_name(cls.distribution))
    else:
        assert cls.extra is None and cls.node_project is not None
        project = cls.node_project
        assert all((project.dir / f).is_file() for f in project.files)
        assert {"package.json", "package-lock.json"} <= set(project.files)
        assert project.dir_env.startswith("LOOPBENCH_")
        deps, locked_npm = _npm_manifest(cls)
        assert cls.distribution in deps and (project.runtime is None or project.runtime in deps)
        locked = locked_npm.get(cls.distribution)
    assert locked is not None, f"{cls.distribution} is not locked"
    assert _version_tuple(locked) >= cls.min_version, "the locked release is one the adapter drives"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_companions_are_locked_and_installed_and_recorded(framework):
    cls = adapter_class(framework)
    assert len(set(cls.companions)) == len(cls.companions) and cls.distribution not in cls.companions
    assert set(cls.companions) <= set(cls.packages), "a companion's version is in every record"
    if cls.package_index == "pypi":
        for name in cls.companions:
            assert canonicalize_name(name) in LOCKED, f"{name} is not in requirements.lock"
            assert metadata.version(name) == LOCKED[canonicalize_name(name)], f"{name} is not installed as locked"
    else:
        deps, locked = _npm_manifest(cls)
        assert cls.node_project is not None
        # the matrix holds each dependency of the driver but the framework and Node itself: all are companions
        assert set(deps) == {cls.distribution, *cls.companions, *filter(None, [cls.node_project.runtime])}
        assert all(name in locked for name in cls.companions)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_matrix_reads_the_framework_from_its_adapter(framework):
    cls = adapter_class(framework)
    assert matrix_frameworks()[cls.distribution] is cls


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_plain_script_is_shipped_and_starts_as_the_adapter_says(framework, tmp_path):
    cls = adapter_class(framework)
    assert cls.plain_script is not None and "/" not in cls.plain_script
    assert plain_scripts()[framework] == cls.plain_script
    shipped = resources.files("loopbench") / "plain" / cls.plain_script
    assert shipped.is_file(), f"loopbench/plain/{cls.plain_script} is missing"
    patterns = PYPROJECT["tool"]["setuptools"]["package-data"]["loopbench"]
    assert any(fnmatch(f"plain/{cls.plain_script}", p) for p in patterns), "the wheel ships it"
    argv = cls.plain_command(plain_script_path(framework), tmp_path)
    assert Path(argv[0]).exists(), argv
    assert Path(argv[-1]).read_text() == shipped.read_text()
    if cls.plain_command.__func__ is Adapter.plain_command.__func__:  # type: ignore[attr-defined]
        assert argv == [sys.executable, str(plain_script_path(framework))] and cls.plain_script.endswith(".py")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_framework_has_documented_claims(framework):
    assert any(c.framework == framework for c in load_claims()), "reports/claims.yaml has no claim of it"


# ---------------------------------------------------------------- from the shared full-suite run
@pytest.fixture(scope="module")
def columns(suite_run) -> dict[str, dict[str, RunRecord]]:
    out: dict[str, dict[str, RunRecord]] = {}
    for r in suite_records():
        out.setdefault(f"{r.framework}:{r.variant}", {})[r.scenario] = r
    return out


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_every_scenario_is_recorded_for_the_variant(columns, framework, variant):
    recs = columns.get(f"{framework}:{variant}", {})
    assert set(recs) == {s.id for s in load_scenarios()}


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_records_carry_what_the_class_declares(columns, framework, variant):
    cls = adapter_class(framework, variant)
    for sid, r in columns.get(f"{framework}:{variant}", {}).items():
        assert (r.variant_about, r.capabilities) == (cls.about, cls.capabilities), sid
        assert r.framework_version is not None and r.packages.get(cls.distribution) == r.framework_version, sid
        assert set(r.packages) <= {cls.distribution, *cls.packages}, sid
        for intent, how in r.native.mechanisms.items():  # the record's mechanism agrees with the table
            assert intent in INTENTS, (sid, intent)
            assert how.startswith("unsupported") == cls.mechanism_table[intent].startswith("unsupported"), (sid, intent)
        for what in r.unsupported:  # only what the class cannot express natively
            head = what.split(":")[0].strip()
            if head in LIMITS:
                assert head not in cls.capabilities.native_limits, (sid, what)
            else:
                assert head in INTENTS and cls.mechanism_table[head].startswith("unsupported"), (sid, what)


# a reported count and the ground truth it counts: a reported 0 where the server saw some is a made-up zero
REPORTED_VS_OBSERVED = (("model_requests_reported", "model_requests_observed"),
                        ("input_tokens_reported", "input_tokens_observed"),
                        ("output_tokens_reported", "output_tokens_observed"),
                        ("cost_usd_reported", "cost_usd_observed"))


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_records_name_the_model_class_and_send_the_model_the_table_gives(columns, framework, variant):
    cls = adapter_class(framework, variant)
    scenarios = {s.id: s for s in load_scenarios()}
    for sid, r in columns.get(f"{framework}:{variant}", {}).items():
        expected = cls.model_id(scenarios[sid])
        assert (r.native.settings.get("model_class"), r.native.settings.get("model")) == (cls.model_class, expected)
        sent = {q.model for q in r.requests if q.model is not None}
        assert sent <= {expected}, (sid, sent, "a request named another model than the table's")


def _answered(r: RunRecord, agent: str | None = None) -> int:
    """Model responses the server completed (a failed request, or one the client cut — before the response or
    mid-stream — is not one); of one agent's requests when `agent` is given."""
    return sum(1 for q in r.requests if q.status == 200 and q.error is None and agent in (None, q.agent))


def _scopes(r: RunRecord) -> list[tuple[int, int]]:
    """(answered, received) of each scope a reported count may cover: the whole tree, and where the scenario has
    sub-agents the main agent's own loop (a framework may report only the parent's: scenario subagent_usage)."""
    scopes = [(_answered(r), len(r.requests))]
    if any(q.agent not in (None, MAIN_AGENT) for q in r.requests):
        scopes.append((_answered(r, MAIN_AGENT), sum(1 for q in r.requests if q.agent in (None, MAIN_AGENT))))
    return scopes


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_reported_model_requests_follow_the_one_rule(columns, framework, variant):
    """One per model response the framework reports (some also report their failed attempts, as the Claude CLI's
    api_retry messages do), null only where it reports none: a count is never below the responses the server
    completed nor above the requests it received — of the whole tree, or of the main agent alone where the
    framework reports only its own loop."""
    for sid, r in columns.get(f"{framework}:{variant}", {}).items():
        reported = r.counters.model_requests_reported
        # at a caller's cancel a framework may drop the turn in flight, its finished response with it (a streamed
        # run's abort: adapters/vercel/probes/abort_in_tool.mjs, probes/openai/cancel_kept.py): one per cancel
        dropped = sum(1 for seg in r.segments if seg.outcome_signals.ended == "cancelled")
        if reported is not None:
            assert any(low - dropped <= reported <= high for low, high in _scopes(r)), (sid, reported, _scopes(r))


@pytest.mark.parametrize(("framework", "variant"), VARIANTS, ids=VARIANT_IDS)
def test_no_signal_is_made_up(columns, framework, variant):
    for sid, r in columns.get(f"{framework}:{variant}", {}).items():
        totals = reported_totals(r.segments)
        for name in SUMMED_COUNTERS:  # a total is null when any segment did not report it, never a partial sum
            assert getattr(r.counters, name) == totals[name], (sid, name)
        # a 0 where the server completed responses (and served usage for them) was not counted: unknown is null.
        # A request cut in flight has no response: a framework that reports 0 after a deadline cut the only
        # request counted right (docs/decisions.md "Reported model requests")
        if _answered(r) > 0:
            for reported, observed in REPORTED_VS_OBSERVED:
                assert not (getattr(r.counters, reported) == 0 and (getattr(r.counters, observed) or 0) > 0), \
                    (sid, reported, "0 reported where the server answered: unknown is null")
        for seg in r.segments:
            sig = seg.outcome_signals
            if sig.ended == "hung":  # it answered nothing: nothing reported
                assert all(v is None for k, v in seg.counters.model_dump().items() if k != "cumulative"), sid
            assert (sig.limit is None) == (sig.limit_signal is None), (sid, "a limit comes with how it was signalled")
            assert not sig.pending or sig.ended == "paused", (sid, "pending calls only at a pause")


@pytest.mark.parametrize("fid", FRAMEWORKS)
def test_every_variant_class_of_an_adapter_module_is_listed_on_its_framework(fid):
    """A variant is found from its framework's `variant_classes`, never by searching subclasses: one defined and
    not listed would silently not run."""
    cls = adapter_class(fid)
    module = sys.modules[cls.__module__]
    defined = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, cls)
               and c.__module__ == module.__name__ and "variant" in c.__dict__ and c is not cls]
    assert set(defined) == set(cls.variant_classes), (fid, defined)
    assert list(cls.idioms()) == [cls.variant, *(c.variant for c in cls.variant_classes)]
