"""What `make install FRAMEWORKS="openai-agents vercel-ai"` installs: the pyproject extras and the Node projects of
those frameworks, read from the adapters' own facts (`extra`, `node_project`), so the Makefile keeps no table of
its own. `python -m loopbench.install_plan extras|node FRAMEWORK...` prints one line: the extras comma-separated,
or the Node project directories space-separated (relative to the checkout). An unknown framework is bad input
(exit 2, with the closest name)."""

from __future__ import annotations

import sys
from pathlib import Path

from loopbench.harness.adapter import adapter_class
from loopbench.harness.errors import BadInput

ROOT = Path(__file__).resolve().parent.parent


def extras(frameworks: list[str]) -> list[str]:
    return list(dict.fromkeys(e for f in frameworks if (e := adapter_class(f).extra) is not None))


def node_dirs(frameworks: list[str]) -> list[str]:
    found = []
    for f in frameworks:
        project = adapter_class(f).node_project
        if project is not None:
            where = project.dir.resolve()
            found.append(str(where.relative_to(ROOT.resolve())) if where.is_relative_to(ROOT.resolve()) else str(where))
    return list(dict.fromkeys(found))


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("extras", "node"):
        print("usage: python -m loopbench.install_plan extras|node FRAMEWORK...", file=sys.stderr)
        return 2
    names = [n for a in argv[1:] for n in a.replace(",", " ").split()]
    try:
        print(",".join(extras(names)) if argv[0] == "extras" else " ".join(node_dirs(names)))
    except BadInput as exc:
        for p in exc.problems:
            print(f"error FRAMEWORKS: {p.reason}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
