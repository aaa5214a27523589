"""The adapter contract: one small base class, capabilities as data, a registry by id, variants as types.

An adapter maps a scenario onto its framework's native controls, runs it through the framework's real
client against the scripted server, and reports native signals and per-segment counters. It never knows
which scenario it runs beyond what the scenario file says (tools, prompt, neutral limits, approval policy).
The SDK is imported lazily inside the adapter module; the core never imports a framework SDK. The registry
names each framework's default class; each other variant is a subclass declaring `variant` and `about` that
overrides only what its idiom changes, listed on the default class (`variant_classes`), so no adapter branches on
its variant.
"""

from __future__ import annotations

import importlib
import os
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import ClassVar, Literal, get_args

from loopbench.harness.errors import BadInput, InputProblem, did_you_mean
from loopbench.harness.models import Provider, model_for
from loopbench.harness.record import (
    REQUIRED_INTENTS,
    Capabilities,
    Intent,
    LimitTranslation,
    NativeSignals,
    NeutralLimit,
    SegmentResult,
)
from loopbench.harness.scenario import Scenario

# id -> "module:Class" of the built-in adapters. Modules are imported only when the adapter is used.
BUILTIN_ADAPTERS: dict[str, str] = {
    "openai-agents": "loopbench.adapters.openai_agents:OpenAIAgentsAdapter",
    "claude-agent-sdk": "loopbench.adapters.claude_agent:ClaudeAgentAdapter",
    "langgraph": "loopbench.adapters.langgraph_agent:LangGraphAdapter",
    "vercel-ai": "loopbench.adapters.vercel_ai:VercelAIAdapter",
    "pydantic-ai": "loopbench.adapters.pydantic_ai_agent:PydanticAIAdapter",
    "google-adk": "loopbench.adapters.google_adk:GoogleADKAdapter",
    "mastra": "loopbench.adapters.mastra_agent:MastraAdapter",
}
BUILTIN = frozenset(BUILTIN_ADAPTERS)
# every registered adapter: the built-ins, then the plug-ins, read on first use (`registry()`), not at import
REGISTRY: dict[str, str] = dict(BUILTIN_ADAPTERS)
_plugins_read = False
ENTRY_POINT_GROUP = "loopbench.adapters"  # an installed package's adapters: `id = "module:Class"` (docs/adapters.md)
REFUSED: list[str] = []  # plug-ins that could not be registered, and why (shown by `loopbench list`)
EXTRA_ADAPTERS_ENV = "LOOPBENCH_EXTRA_ADAPTERS"
TOOL_CHOICE_INTENTS: tuple[Intent, ...] = ("tool_choice_first", "tool_choice_later")


def _register_plugins() -> None:
    """Installed packages' adapters (the entry-point group), then LOOPBENCH_EXTRA_ADAPTERS="id=module:Class,..."
    (test doubles, an adapter not packaged yet). Nothing is imported here: a class is loaded when it is used."""
    found = [(ep.name, ep.value, f"entry point of {ep.dist.name if ep.dist else '?'}")
             for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    for item in filter(None, os.environ.get(EXTRA_ADAPTERS_ENV, "").split(",")):
        fid, _, target = item.partition("=")
        found.append((fid.strip(), target.strip(), EXTRA_ADAPTERS_ENV))
    for fid, target, source in found:
        if fid in BUILTIN:
            REFUSED.append(f"{fid} ({source}): the id of a built-in adapter; choose another")
        elif ":" not in target:
            REFUSED.append(f"{fid} ({source}): {target!r} is not module:Class")
        else:
            REGISTRY[fid] = target


def registry() -> dict[str, str]:
    """Every registered adapter, id -> "module:Class": the plug-ins are read the first time it is asked."""
    global _plugins_read
    if not _plugins_read:
        _plugins_read = True
        _register_plugins()
    return REGISTRY


def refused() -> list[str]:
    """The plug-ins that could not be registered, and why (once the registry has read them)."""
    registry()
    return list(REFUSED)


def register(fid: str, target: str) -> None:
    """Register an adapter in this process (`--loop-cmd`); workers get it from each job (`adapter_target`)."""
    registry()[fid] = target


def adapter_target(framework: str) -> str:
    """The "module:Class" a worker imports for `framework`, as registered here: a job names it, so a worker finds
    a plug-in or a `--loop-cmd` adapter without reading any registry of its own."""
    try:
        return registry()[framework]
    except KeyError:
        raise _unknown("unknown framework", framework, sorted(registry())) from None


def load_adapter(target: str) -> type[Adapter]:
    """The adapter class a "module:Class" target names (its module imported now)."""
    module, _, name = target.partition(":")
    cls: type[Adapter] = getattr(importlib.import_module(module), name)
    return cls


@dataclass(frozen=True)
class RunContext:
    """Everything an adapter needs for one segment, and nothing about the scenario's expectations."""

    run_id: str
    api_key: str  # per-run key: the server routes every request of this run by it
    base_url: str  # the scripted server, e.g. http://127.0.0.1:PORT (clients add /v1)
    ledger_token: str
    work_dir: Path  # a private temp dir for this segment (cwd, config dirs)
    snapshot_dir: Path  # where to save a pause (an empty dir)
    # shared by every segment of one business task (the first run and each resume): where a framework's own
    # persistence lives when its docs keep one live store (a checkpointer database, a session store)
    task_dir: Path = Path()
    variant: str = "default"
    extra_env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeProject:
    """Where an npm framework's adapter runs its framework from: a Node project shipped with the adapter (its
    `package.json` and `package-lock.json`). The version matrix copies it and installs another release there;
    the adapter runs from such a copy when `dir_env` names one."""

    dir: Path  # the shipped project
    files: tuple[str, ...]  # what a copy of it needs (the matrix's cache key is their content)
    dir_env: str  # the environment variable that points the adapter at a copy of its own
    runtime: str | None = None  # the npm package that is Node itself: the matrix keeps it within its locked major


class Adapter(ABC):
    """One framework idiom. The registered class is the framework's `default` variant; every other variant is
    a subclass that declares its own `variant` id and `about`, and overrides only what its idiom changes.

    Besides what a run needs, the class holds its framework's facts, which the rest of loopbench reads from
    it and never restates: the version matrix (loopbench/matrix.py) builds an environment from `extra` (or
    `node_project`), `distribution`, `package_index` and `companions`; the bench (loopbench/bench/) runs
    `plain_script` with `plain_command`; tests/test_adapter_contract.py checks them for every built-in adapter
    (docs/adapters.md lists the files a new built-in adapter touches)."""

    id: ClassVar[str]
    variant: ClassVar[str] = "default"
    about: ClassVar[str]  # what this idiom is ("default": the framework's defaults)
    capabilities: ClassVar[Capabilities]
    # the framework's own model class this idiom drives (its import path, as its docs name it) and the provider
    # whose model it sends (not always the protocol it speaks: an OpenAI-compatible route carries Claude): the
    # scenario's model when that is the provider's, else the model table's for the provider (harness/models.py;
    # docs/decisions.md "Each framework's own model class"). None: not declared — a plug-in that does not say;
    # its records then carry null, and it sends the scenario's model as it is
    model_class: ClassVar[str | None] = None
    model_provider: ClassVar[Provider | None] = None
    # whether the worker warms this idiom with a throw-away run before its first timed segment (False where each
    # run starts the framework afresh, e.g. a CLI per run: there is nothing a worker could warm)
    warm_up_run: ClassVar[bool] = True
    # intent -> the native mechanism this idiom uses for it, for every `Intent` (one it cannot express: a value
    # starting `unsupported: why`); `mechanisms()` keeps, per segment, the ones the scenario states
    mechanism_table: ClassVar[dict[Intent, str]] = {}
    # the package whose version is the framework version: the one a record's `framework_version` is, and the one
    # the version matrix varies (`loopbench matrix --versions DISTRIBUTION=V1,V2`)
    distribution: ClassVar[str]
    package_index: ClassVar[Literal["pypi", "npm"]] = "pypi"  # where `distribution`'s releases are published
    min_version: ClassVar[tuple[int, ...]] = (0,)
    packages: ClassVar[tuple[str, ...]] = ()  # every further package whose version a record lists
    # the extra of loopbench's pyproject.toml that installs the framework (`pip install loopbench[EXTRA]`; the
    # matrix resolves it with `distribution` at each version); None: not a PyPI framework (see `node_project`)
    extra: ClassVar[str | None] = None
    # npm: the Node project the framework runs from (None: a Python framework)
    node_project: ClassVar[NodeProject | None] = None
    # the packages released together with the framework, which the version matrix holds to what was published
    # by a release's day (so a release runs beside the companions of its time, not today's); PyPI: each is
    # resolved with uv's --exclude-newer-package; npm: each dependency of `node_project`'s package.json other than
    # `distribution` and its `runtime` (npm's --before)
    companions: ClassVar[tuple[str, ...]] = ()
    # the Python modules of the framework and of the provider clients it drives (a prefix: `google.adk` covers
    # `google.adk.agents`): the only SDKs its adapter module may import, the ones mypy finds but does not analyse
    # (pyproject's overrides), and the ones the core and the unit tests never import (tests/test_layers.py,
    # tests/tiers.py). Empty for a framework that runs outside Python (a Node driver)
    sdk_modules: ClassVar[tuple[str, ...]] = ()
    # how prose names the framework ("the OpenAI Agents SDK"): the README's generated sentences; None: its id
    display_name: ClassVar[str | None] = None
    # the id prefix of the framework's own documented claims in reports/claims.yaml (`PA` for PA01, PA02, …);
    # None: its claims are among the seed claims (C01…), which name their framework each
    claim_prefix: ClassVar[str | None] = None
    # `loopbench bench`'s plain script (a file in loopbench/plain/, no loopbench code: the framework driven as its
    # docs show, one JSON request per stdin line); None: the bench leaves the framework out
    plain_script: ClassVar[str | None] = None

    @classmethod
    def plain_command(cls, script: Path, work: Path) -> list[str]:
        """The command that starts `plain_script` (at `script`) for the bench, `work` a private directory it may
        prepare things in: by default this Python on the script."""
        return [sys.executable, str(script)]

    # the framework's other idioms, listed on its registered class once they are defined (each a subclass declaring
    # its own `variant` and `about`), in the order runs and reports show them:
    # `MyAdapter.variant_classes = (MyStreaming, MyOtherProvider)` at the end of the adapter module
    variant_classes: ClassVar[tuple[type[Adapter], ...]] = ()

    @classmethod
    def idioms(cls) -> dict[str, type[Adapter]]:
        """This framework's variants, by id: this class, then its listed `variant_classes`."""
        found: dict[str, type[Adapter]] = {cls.variant: cls}
        for sub in cls.variant_classes:
            found.setdefault(sub.variant, sub)
        return found

    @classmethod
    def variants(cls) -> dict[str, str]:
        """Variant id -> what it is."""
        return {v: c.about for v, c in cls.idioms().items()}

    @classmethod
    def version(cls) -> str | None:
        try:
            return metadata.version(cls.distribution)
        except metadata.PackageNotFoundError:
            return None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """None when the framework can run here; otherwise why not (missing or too old)."""
        version = cls.version()
        if version is None:
            return f"{cls.distribution} is not installed"
        parsed = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
        if parsed < cls.min_version:
            need = ".".join(map(str, cls.min_version))
            return f"{cls.distribution} {version} is older than the {need} this adapter needs"
        return None

    @classmethod
    def package_versions(cls) -> dict[str, str]:
        out = {}
        for name in (cls.distribution, *cls.packages):
            try:
                out[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                continue
        return out

    @classmethod
    def warm(cls) -> None:
        """Import the SDK once per worker, before any run is timed."""
        return None

    @classmethod
    def model_id(cls, scenario: Scenario) -> str:
        """The model id this idiom's model class sends for the scenario (harness/models.py)."""
        return scenario.model.id if cls.model_provider is None else model_for(scenario.model.id, cls.model_provider)

    # the CPU a live child (a Node driver) spent in `prepare`, which the worker's clock cannot see (set by prepare)
    prepare_child_cpu_s: float = 0.0

    async def prepare(self, scenario: Scenario, ctx: RunContext) -> None:
        """Set up what an application sets up before it starts a run — a store, a session service — for the
        segment `ctx` names, keeping it on this instance for `run` / `resume`. The worker calls it before the
        segment's clock starts (its time is recorded apart: `segments[].prepare_s`), so it eats into neither the
        run's time nor the framework's own deadline. An application does this once; loopbench does it for each
        task (each has its own state), so its CPU counts as loopbench's own (`loopbench_worker_cpu_s`).
        Nothing by default."""
        return None

    async def segment(self, scenario: Scenario, ctx: RunContext, snapshot: Path | None = None,
                      decisions: dict[str, str] | None = None) -> SegmentResult:
        """One segment, as the worker runs it: `run` (no snapshot) or `resume`, then what every record says of
        the idiom whatever the adapter wrote — the model class and the model it sent (`settings.model_class`,
        `settings.model`)."""
        if missing := self.inexpressible(scenario):
            result = self.not_run(missing)
        elif snapshot is None:
            result = await self.run(scenario, ctx)
        else:
            result = await self.resume(scenario, snapshot, decisions or {}, ctx)
        settings = {**result.settings, "model_class": self.model_class, "model": self.model_id(scenario)}
        return self.declared(scenario, result).model_copy(update={"settings": settings})

    def declared(self, scenario: Scenario, result: SegmentResult) -> SegmentResult:
        """The step every segment shares, filled here from the adapter's declared data so no adapter can skip
        it (as pydantic-ai's `Model.prepare_request()`): a mechanism for each intent the scenario states (the
        adapter's own words where it gave them, else its `mechanism_table`); each neutral limit the scenario sets
        that the framework has no native control for, untranslated (`native` None); and in `unsupported` every
        limit left untranslated and every `tool_choice` intent the idiom cannot express — what the adapter listed
        first, in its order. A cell that could not be set up is then recorded as unsupported, never as deviating."""
        mechanisms = self.mechanisms(scenario, {**self.mechanism_table, **result.mechanisms})
        limits = {str(k): v for k, v in result.limits.items()}
        limits.update({k: v for k, v in self.unsupported_limits(scenario).items() if k not in limits})
        untranslated = [name for name, t in limits.items() if t.native is None and t.neutral is not None]
        unsupported = list(result.unsupported)
        for item in [*untranslated, *self.unsupported_tool_choice(mechanisms)]:
            if item not in unsupported:
                unsupported.append(item)
        return result.model_copy(update={"mechanisms": mechanisms, "limits": limits, "unsupported": unsupported})

    @classmethod
    def inexpressible(cls, scenario: Scenario) -> list[str]:
        """The intents the scenario cannot run without (`REQUIRED_INTENTS`: sub-agents, a cancel, a resume after
        it, a structured answer and its check) for which this idiom's `mechanism_table` names no mechanism."""
        stated = cls.mechanisms(scenario, cls.mechanism_table)
        return [i for i in REQUIRED_INTENTS if i in stated and stated[i].startswith("unsupported")]

    @staticmethod
    def not_run(missing: list[str]) -> SegmentResult:
        """The segment of a scenario this idiom cannot express (`inexpressible`: sub-agents where its
        `mechanism_table` has no `delegate`, a cancel where it has no `cancel`): the framework is not started and
        nothing is made up; `declared` names the intents."""
        return SegmentResult(signals=NativeSignals(ended="not_run"), unsupported=list(missing))

    @classmethod
    def unsupported_limits(cls, scenario: Scenario) -> dict[str, LimitTranslation]:
        """The neutral limits the scenario sets that the framework has no native control for, as limit
        translations with no native setting: recorded as unsupported, never emulated, never dropped."""
        return {
            name: LimitTranslation(neutral=value, native=None)
            for name in get_args(NeutralLimit)
            if name not in cls.capabilities.native_limits and (value := getattr(scenario.limits, name)) is not None
        }

    @classmethod
    def mechanisms(cls, scenario: Scenario, table: dict[Intent, str]) -> dict[Intent, str]:
        """The native mechanism used for each intent the scenario states (from the adapter's `table`), for
        a segment's `mechanisms`: delegate for sub-agents, cancel (and resume_after_cancel) for a caller's cancel,
        deny_stop / deny_continue when a tool is denied by policy (by `policy.deny`),
        approval_pause when a tool needs approval, reject when a resume rejects a call, tool_choice_first /
        tool_choice_later when the opening / a later turn asks a `tool_choice`, tool_error_recoverable /
        tool_error_fatal when a tool answers with an error of that kind (a timeout is recoverable), structured_output
        (and output_check) when the task ends with a structured answer (whose schema has a check)."""
        used: list[Intent] = []
        if scenario.agents:
            used.append("delegate")
        if scenario.cancel is not None:
            used.append("cancel")
            if scenario.cancel.resume:
                used.append("resume_after_cancel")
        if any(t.approval == "deny" for t in scenario.tools.values()):
            used.append("deny_stop" if scenario.policy.deny == "stop" else "deny_continue")
        if any(t.approval == "required" for t in scenario.tools.values()):
            used.append("approval_pause")
        if any(d == "reject" for r in scenario.resumes for d in r.decisions.values()):
            used.append("reject")
        rules = scenario.tool_choice_rules()
        if any(r.opening for r in rules):
            used.append("tool_choice_first")
        if any(not r.opening for r in rules):
            used.append("tool_choice_later")
        if scenario.output is not None:
            used.append("structured_output")
            if scenario.output.check is not None:
                used.append("output_check")
        kinds = scenario.tool_error_kinds()
        if "recoverable" in kinds:
            used.append("tool_error_recoverable")
        if "fatal" in kinds:
            used.append("tool_error_fatal")
        return {intent: table.get(intent, "unsupported") for intent in used}

    @staticmethod
    def unsupported_tool_choice(mechanisms: dict[Intent, str]) -> list[str]:
        """The `tool_choice` intents the framework cannot express, for a segment's `unsupported` (its requests
        then go with the framework's default, and the record says the cell could not be set up)."""
        return [i for i in TOOL_CHOICE_INTENTS if mechanisms.get(i, "").startswith("unsupported")]

    @abstractmethod
    async def run(self, scenario: Scenario, ctx: RunContext) -> SegmentResult:
        """Run the scenario from its prompt until the framework returns, raises or pauses."""

    @abstractmethod
    async def resume(
        self, scenario: Scenario, snapshot: Path, decisions: dict[str, str], ctx: RunContext
    ) -> SegmentResult:
        """Continue from a copy of a pause snapshot with approval decisions keyed by scripted call id."""


def _unknown(what: str, name: str, available: list[str]) -> BadInput:
    """`-f` naming no framework or variant: the closest one, and every one there is."""
    hint = did_you_mean(name, available)
    return BadInput([InputProblem("--framework", "", f"{what} {name!r}{f' ({hint})' if hint else ''}; available: "
                                  f"{', '.join(available)}")])


def adapter_class(framework: str, variant: str = "default") -> type[Adapter]:
    cls = load_adapter(adapter_target(framework))
    idioms = cls.idioms()
    if variant not in idioms:
        raise _unknown(f"{framework} has no variant", variant, list(idioms))
    return idioms[variant]


@dataclass(frozen=True)
class FrameworkInfo:
    id: str
    variants: dict[str, str]
    version: str | None
    unavailable: str | None
    capabilities: Capabilities | None = None


def describe_frameworks() -> list[FrameworkInfo]:
    out = []
    for fid in sorted(registry()):
        try:
            cls = adapter_class(fid)
        except ImportError as exc:  # the adapter module itself failed to import
            out.append(FrameworkInfo(fid, {}, None, f"adapter failed to import: {exc}"))
            continue
        out.append(FrameworkInfo(fid, cls.variants(), cls.version(), cls.unavailable_reason(), cls.capabilities))
    return out


def resolve_selection(selection: list[str]) -> list[tuple[str, str]]:
    """`F` selects every variant of F; `F:V` one variant. Empty: every variant of every framework."""
    frameworks = describe_frameworks()
    by_id = {f.id: f for f in frameworks}
    if not selection:
        return [(f.id, v) for f in frameworks for v in f.variants]
    chosen: list[tuple[str, str]] = []
    for item in selection:
        fid, _, variant = item.partition(":")
        if fid not in by_id:
            raise _unknown("unknown framework", fid, sorted(by_id))
        variants = by_id[fid].variants
        if variant and variant not in variants:
            raise _unknown(f"{fid} has no variant", variant, list(variants))
        for v in [variant] if variant else list(variants):
            if (fid, v) not in chosen:
                chosen.append((fid, v))
    return chosen
