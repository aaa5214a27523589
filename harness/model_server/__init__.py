"""The scripted model server: it answers each model request from the scenario's script (scenarios/README.md,
"The scripted model").

`ModelServer` is the ASGI app with per-run routing and the request log; `running(server)` serves it from a
thread of this process; `serve_forever(port, scenario)` is `loopbench serve`. The turn choice lives in
`script.py`; one module per wire protocol.
"""

from loopbench.harness.model_server.app import ModelServer, running, serve_forever

__all__ = ["ModelServer", "running", "serve_forever"]
