"""`list`, `validate` and `schema`: the commands that describe the suite, the frameworks and the file formats,
without running anything."""

from __future__ import annotations

import json
from pathlib import Path

from rich.table import Table

from loopbench.commands.choices import SchemaKind
from loopbench.commands.common import err, load_suite, out, print_tables


def list_(as_json: bool, scenarios_from: list[Path] | None) -> None:
    """The scenarios, the claims they check and the frameworks (variants, versions, capabilities): as tables (piped,
    plain and at full width: every id whole), or as one JSON document."""
    from loopbench.harness.adapter import describe_frameworks, refused

    for why in refused():
        err.print(f"[yellow]warning[/yellow] adapter not registered: {why}", highlight=False, soft_wrap=True)
    scenarios = load_suite(scenarios_from)
    from loopbench.reports.claims import load_claims

    frameworks = describe_frameworks()
    used = {c for s in scenarios for c in s.claims}
    claims = [c for c in load_claims() if c.id in used]
    if as_json:
        print(json.dumps({
            "scenarios": [{"id": s.id, "title": s.title, "category": s.category, "claims": s.claims}
                          for s in scenarios],
            "claims": [{"id": c.id, "framework": c.framework, "text": c.text} for c in claims],
            "frameworks": [{"id": f.id, "variants": list(f.variants), "about": f.variants, "version": f.version,
                            "available": f.unavailable is None, "unavailable": f.unavailable,
                            "capabilities": f.capabilities.model_dump(mode="json") if f.capabilities else None}
                           for f in frameworks],
        }, indent=2))
        return
    table = Table(title=f"{len(scenarios)} scenarios")
    for col in ("id", "category", "claims", "title"):
        table.add_column(col)
    for s in scenarios:
        table.add_row(s.id, s.category, " ".join(s.claims), s.title)
    ftable = Table(title="frameworks")
    for col in ("id", "variants", "version", "status"):
        ftable.add_column(col)
    for f in frameworks:
        ftable.add_row(f.id, ", ".join(f.variants), f.version or "-", f.unavailable or "available")
    vtable = Table(title="variants (what each idiom is, as its adapter declares it)")
    for col in ("framework:variant", "what it is"):
        vtable.add_column(col)
    for f in frameworks:
        for variant, about in f.variants.items():
            vtable.add_row(f"{f.id}:{variant}", about)
    tables = [table, ftable, vtable]
    if claims:
        cltable = Table(title="documented claims the scenarios check (reports/claims.yaml)")
        for col in ("id", "framework", "claim"):
            cltable.add_column(col)
        for c in claims:
            cltable.add_row(c.id, c.framework, c.text)
        tables.append(cltable)
    ctable = Table(title="capabilities (declared by each adapter)")
    for col in ("id", "native limits", "step unit", "pause", "deny"):
        ctable.add_column(col)
    for f in frameworks:
        if (caps := f.capabilities) is not None:
            pause = f"{caps.pause}, {'survives' if caps.pause_survives_restart else 'does not survive'} a restart"
            ctable.add_row(f.id, ", ".join(sorted(caps.native_limits)) or "none", caps.step_unit, pause, caps.deny)
    tables.append(ctable)
    print_tables(*tables)


def validate(files: list[Path] | None, scenarios_from: list[Path] | None) -> None:
    """Load the scenario files (BadInput lists every problem) and confirm them, with a note for a directory that
    has no suite defaults file."""
    scenarios = load_suite(scenarios_from, files)
    from loopbench.harness.scenario import SUITE_DEFAULTS_FILE

    for directory in sorted({Path(s.source).resolve().parent for s in scenarios}):
        if not (directory / SUITE_DEFAULTS_FILE).exists():  # not an error, but easy to miss: say it
            err.print(f"[yellow]note[/yellow] {directory}: no {SUITE_DEFAULTS_FILE} here, so no suite defaults "
                      "(limits, model, tool catalogue) apply to its files; `extends: builtin` in one would add "
                      "the built-in ones", highlight=False, soft_wrap=True)
    out.print(f"{len(scenarios)} scenario(s) valid")


def schema(what: SchemaKind) -> None:
    """Print the JSON Schema of `what`."""
    if what is SchemaKind.scenario:
        from loopbench.harness.scenario import Scenario as model
    elif what is SchemaKind.summary:
        from loopbench.reports.summary import Summary as model  # type: ignore[assignment]
    elif what is SchemaKind.diff:
        from loopbench.reports.diff import DiffOut as model  # type: ignore[assignment]
    else:
        from loopbench.harness.record import RunRecord as model  # type: ignore[assignment]
    print(json.dumps(model.model_json_schema(), indent=2))
