"""The closed choices the command line's options take, in a module that imports nothing heavy: typer needs them
when the commands are declared, so `loopbench --help` would otherwise import the record, the reports and the
runner before it prints a line."""

from __future__ import annotations

from enum import StrEnum


class DiffFormat(StrEnum):
    """`diff --format`."""

    md = "md"
    json = "json"


class SchemaKind(StrEnum):
    """What `schema` prints the JSON Schema of."""

    scenario = "scenario"
    record = "record"
    summary = "summary"
    diff = "diff"


class FailOnChoice(StrEnum):
    """`--fail-on`'s words: harness/record.py's `FailOn` (tests/test_cli.py keeps the two the same), which the
    commands get (`FailOn(choice)`)."""

    error = "error"
    deviation = "deviation"
    change = "change"
