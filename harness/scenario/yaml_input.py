"""Reading the YAML a user hands loopbench (scenario files, `_suite.yaml`, claims), strictly and boundedly.

`yaml.safe_load` alone accepts duplicate keys (the last one silently wins), expands an alias bomb into a
structure that stalls whoever serialises it, reads a file of any size and raises a traceback on bytes that are
not UTF-8. Here each of those is an `InputError` with the file and what is wrong, before anything runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from loopbench.harness.errors import LoopbenchError

MAX_FILE_BYTES = 1_000_000  # a scenario or claims file: the whole suite's files are ~50 KB together
MAX_ALIASES = 100  # alias uses per document: plenty for shared fragments, far from a bomb
MAX_DEPTH = 50  # nesting of mappings and lists: the suite's deepest is 7; 5,000 fit in 1 MB and blow the stack


class InputError(LoopbenchError):
    """A YAML input that cannot be read: `where` (e.g. "line 3, column 5") and `reason`."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}" if where else reason)


class _StrictLoader(yaml.SafeLoader):
    def __init__(self, stream: str):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_ALIASES} aliases", mark)
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the base constructor reports it
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (also at line {seen[key].line + 1})", key_node.start_mark)
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: Path) -> Any:
    """The YAML data of `path`. Raises InputError (too large, not UTF-8, a syntax error, a duplicate key, too
    many aliases, too deep, a number too long) or OSError (cannot be read)."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError("", f"{size:,} bytes: larger than the {MAX_FILE_BYTES:,} bytes an input file may have")
    raw = path.read_bytes()
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError("", "UTF-16 text: save it as UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"line {line}", f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(where, f"YAML: {getattr(exc, 'problem', None) or exc}") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError("", f"YAML: {exc}") from None
