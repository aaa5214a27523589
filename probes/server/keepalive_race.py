"""Probe (no loopbench code): a client reusing a keep-alive connection at the moment the server closes it.

uvicorn closes an idle connection after `timeout_keep_alive` (default 5 s); httpx keeps one in its pool for
`keepalive_expiry` (default 5 s), counted from when *it* finished reading the response, a little later than
the server's clock starts. A request sent in between finds a connection the server is closing.

Usage: keepalive_race.py SERVER_KEEPALIVE_S [CLIENTS] [GIL_HOGS] [IDLE_OFFSET_S]
Each client makes a request, stays idle for 5 s +- 30 ms (staggered across clients), then requests again on
the same pooled connection. Prints how many second requests failed, and with what. GIL_HOGS busy threads in
the process stand for what tests/test_load.py has: the server thread and the clients sharing one interpreter,
so the server's loop may wake late, find its keep-alive timer expired and close a socket whose next request
is already in the kernel's buffer: a reset, `httpx.ReadError` in the client.

Measured on this machine (2026-12-02): at 5 s, 0 of 300 second requests failed, and 0 of 300 with 2 busy
threads: the race is rare enough not to reproduce here (1,000 clients at once end in connect timeouts, which is
the probe's own limit, not this race). The server's keep-alive is now 75 s (harness/model_server/app.py).
"""

import asyncio
import collections
import socket
import sys
import threading

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

KEEP_ALIVE = int(sys.argv[1]) if len(sys.argv) > 1 else 5
CLIENTS = int(sys.argv[2]) if len(sys.argv) > 2 else 300
GIL_HOGS = int(sys.argv[3]) if len(sys.argv) > 3 else 0


def spin() -> None:
    while True:
        sum(range(1000))


for _ in range(GIL_HOGS):
    threading.Thread(target=spin, daemon=True).start()


async def ok(request):
    await request.body()
    return PlainTextResponse("ok")


app = Starlette(routes=[Route("/", ok, methods=["POST"])])
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
sock.bind(("127.0.0.1", 0))
server = uvicorn.Server(uvicorn.Config(app, log_level="critical", timeout_keep_alive=KEEP_ALIVE,
                                       http="httptools", loop="uvloop"))
threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
while not server.started:
    pass
url = f"http://127.0.0.1:{sock.getsockname()[1]}/"


async def client(i: int, outcomes: collections.Counter) -> None:
    idle = 5.0 - 0.03 + 0.06 * i / CLIENTS + float(sys.argv[4] if len(sys.argv) > 4 else 0)
    async with httpx.AsyncClient() as c:  # httpx defaults: keepalive_expiry=5.0
        await c.post(url, content=b"x")
        await asyncio.sleep(idle)
        try:
            await c.post(url, content=b"y")
            outcomes["ok"] += 1
        except httpx.HTTPError as exc:
            outcomes[type(exc).__name__] += 1


async def main() -> None:
    outcomes: collections.Counter = collections.Counter()
    await asyncio.gather(*(client(i, outcomes) for i in range(CLIENTS)))
    print(f"server keep-alive {KEEP_ALIVE} s, {CLIENTS} clients idle 4.97-5.03 s, {GIL_HOGS} busy threads: "
          f"{dict(outcomes)}")


asyncio.run(main())
server.should_exit = True
