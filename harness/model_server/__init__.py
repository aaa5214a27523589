"""The scripted model server (DESIGN.md "Scripted model server").

`ModelServer` is the ASGI app with per-run routing and the request log; `running(server)` serves it from a
thread of this process; `serve_forever(port, scenario)` is `loopbench serve`. The turn choice lives in
`script.py`; one module per wire protocol.
"""

from loopbench.harness.model_server.app import ModelServer, running, serve_forever

__all__ = ["ModelServer", "running", "serve_forever"]
