"""`loopbench serve`: the scripted model server standalone, serving one scenario's script (or any scenario's, by
the run key) until it is stopped."""

from __future__ import annotations

from pathlib import Path

from loopbench.commands.common import load_suite, select


def serve(port: int, scenario: str | None, scenarios_from: list[Path] | None) -> None:
    """Serve on 127.0.0.1:`port` (0: a free one); BadInput for bad scenario files or an unknown scenario."""
    from loopbench.harness.model_server.app import serve_forever

    pool = load_suite(scenarios_from)
    if scenario is None and scenarios_from and len(pool) == 1:
        scenario = pool[0].id  # one scenario of your own: no need to name it again
    chosen = select(pool, [scenario])[0] if scenario else None
    serve_forever(port, chosen)
