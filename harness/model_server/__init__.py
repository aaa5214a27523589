"""The scripted model server: it answers each model request from the scenario's script (scenarios/README.md,
"The scripted model").

`ModelServer` is the ASGI app with per-run routing and the request log; `running(server)` serves it from a
thread of this process; `serve_forever(port, scenario)` is `loopbench serve`. The turn choice lives in
`script.py`; one module per wire protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from loopbench.harness.lazy import exports

if TYPE_CHECKING:
    from loopbench.harness.model_server.app import ModelServer, running, serve_forever

# imported on first use (harness/lazy.py): a light part of this package never imports the rest
__getattr__ = exports(__name__, {
    "ModelServer": "loopbench.harness.model_server.app",
    "running": "loopbench.harness.model_server.app",
    "serve_forever": "loopbench.harness.model_server.app",
})
__all__ = ["ModelServer", "running", "serve_forever"]
