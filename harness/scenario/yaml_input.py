"""Reading the YAML a user hands loopbench (scenario files, `_suite.yaml`, claims), strictly and boundedly.

`yaml.safe_load` alone accepts duplicate keys (the last one silently wins), expands an alias bomb into a
structure that stalls whoever serialises it, reads a file of any size and raises a traceback on bytes that are
not UTF-8. Here each of those is an `InputError` with the file and what is wrong, before anything runs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from loopbench.harness.errors import LoopbenchError

MAX_FILE_BYTES = 1_000_000  # a scenario or claims file: the whole suite's files are ~50 KB together
MAX_ALIASES = 100  # alias uses per document: plenty for shared fragments, far from a bomb
# the C0 controls but tab, LF and CR, and DEL: characters YAML does not allow in a document (libyaml would say so
# without saying where)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_DEPTH = 50  # nesting of mappings and lists: the suite's deepest is 7; 5,000 fit in 1 MB and blow the stack


class InputError(LoopbenchError):
    """A YAML input that cannot be read: `where` (e.g. "line 3, column 5") and `reason`."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}" if where else reason)


# libyaml's parser where PyYAML was built with it (the pure-Python one parses the suite ~10x slower: most of
# `loopbench list`'s time); the bounds are checked on the composed node graph, before anything is constructed
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _bounded(root: Any) -> None:
    """Refuse a node graph with more than MAX_ALIASES alias uses (an alias is a node met again) or nested deeper
    than MAX_DEPTH: before construction, so an alias bomb is never expanded."""
    seen: set[int] = set()
    aliases = 0
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise yaml.composer.ComposerError(None, None, f"more than {MAX_ALIASES} aliases", node.start_mark)
            continue
        seen.add(id(node))
        if depth > MAX_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", node.start_mark)
        if isinstance(node, yaml.SequenceNode):
            stack += [(child, depth + 1) for child in reversed(node.value)]
        elif isinstance(node, yaml.MappingNode):
            stack += [(part, depth + 1) for pair in reversed(node.value) for part in pair]


class _StrictLoader(_Base):
    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            _bounded(node)
        return node

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
    if bad := _CONTROL.search(text):
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise InputError(f"line {line}, column {column}",
                         f"YAML: special characters are not allowed (U+{ord(bad.group()):04X})")
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = str(getattr(exc, "problem", None) or exc)
        if "maximum nesting depth" in problem:  # libyaml's own bound (1,000) met before ours
            problem = f"nested deeper than {MAX_DEPTH} levels"
        raise InputError(where, f"YAML: {problem}") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError("", f"YAML: {exc}") from None
