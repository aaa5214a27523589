"""The process that runs an npm framework: one long-lived `node driver.mjs` per worker and framework, spoken to
over the Node line protocol (adapters/node/README.md; its lines are the models of `protocol.py`).

Thread-safe and synchronous (an adapter calls it through `asyncio.to_thread`). Started lazily (in the adapter's
`warm`, before a run is timed); a driver that dies is reported for its in-flight requests (DriverDied) and
restarted at once, in the background, for the next one.
"""

from __future__ import annotations

import collections
import itertools
import json
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from loopbench.adapters.node.protocol import (
    A,
    DriverError,
    ErrorAnswer,
    Hello,
    Request,
    read_answer,
    read_hello,
)
from loopbench.harness.errors import LoopbenchError

HELLO_TIMEOUT_S = 60.0
H = TypeVar("H", bound=Hello)
R = TypeVar("R")


class DriverDied(LoopbenchError):
    """The Node driver process ended while a request was in flight."""


@dataclass(frozen=True)
class _Died:
    """What a request waiting on a driver that died receives instead of its answer."""

    reason: str


@dataclass(frozen=True)
class Reply(Generic[R]):
    """A request's answer and how it was delivered (the driver that served it, the wait for its start)."""

    answer: R | ErrorAnswer
    driver_pid: int
    waited_s: float  # > 0 when the request waited for a driver (re)start


class NodeDriver(Generic[H]):
    """One long-lived `driver.mjs` process, spoken to over line-delimited JSON (thread-safe, sync API).

    Started lazily; after an unexpected death restarted at once in the background (or by the next request).
    It stays in the worker's process group, so killing the worker kills it too. Requests may overlap; answers
    are routed by request id. Lines the driver sends without a known id (errors for malformed input) go to `unrouted`.
    """

    def __init__(self, home: Path, hello_model: type[H], label: str):
        # the driver runs beside its node_modules, on the Node binary the locked `node` package installs
        self.label = label  # how its lines are tagged in the worker's log
        self.hello_model = hello_model  # the framework's hello (its `defaults`)
        self.argv = [str(home / "node_modules" / ".bin" / "node"), str(home / "driver.mjs")]
        self.cwd = home
        self.proc: subprocess.Popen[str] | None = None
        self.hello: H | None = None
        self.starts = 0
        self.unrouted: queue.Queue[ErrorAnswer] = queue.Queue()
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[subprocess.Popen[str], queue.Queue[dict[str, Any] | _Died]]] = {}
        self._ids = itertools.count(1)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=20)
        self._hello_q: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._closing = False

    # ---- process
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure(self) -> H:
        with self._lock:
            self._closing = False
            if not self.alive():
                self._start()
            assert self.hello is not None
            return self.hello

    def _restart_quietly(self) -> None:
        with self._lock:
            if self._closing:
                return
        try:
            self.ensure()
        except (DriverDied, DriverError, OSError) as exc:  # the next request will try again and raise
            print(f"[{self.label}] restart after a crash failed: {exc}", file=sys.stderr)

    def _start(self) -> None:
        self._stderr_tail.clear()
        self._hello_q = queue.Queue()
        proc = subprocess.Popen(
            self.argv, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, encoding="utf-8", bufsize=1,
        )
        self.proc = proc
        self.starts += 1
        threading.Thread(target=self._read_stdout, args=(proc, self._hello_q), daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(proc,), daemon=True).start()
        try:
            hello = self._hello_q.get(timeout=HELLO_TIMEOUT_S)
        except queue.Empty:
            self._kill(proc)
            raise DriverDied(f"the Node driver sent no hello within {HELLO_TIMEOUT_S:.0f} s") from None
        if hello is None:
            raise DriverDied(f"the Node driver exited before its hello: {self._death_reason(proc)}")
        try:
            self.hello = read_hello(hello, self.hello_model)
        except DriverError:
            self._kill(proc)
            raise

    @staticmethod
    def _kill(proc: subprocess.Popen[str]) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait()

    def _death_reason(self, proc: subprocess.Popen[str]) -> str:
        code = proc.wait()
        how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        tail = " | ".join(self._stderr_tail)
        return f"the Node driver (pid {proc.pid}) {how}" + (f"; stderr: {tail[-800:]}" if tail else "")

    def _read_stdout(self, proc: subprocess.Popen[str], hello_q: queue.Queue[dict[str, Any] | None]) -> None:
        assert proc.stdout is not None
        got_hello = False
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                msg = None
            if not isinstance(msg, dict):
                print(f"[{self.label}] not a protocol line: {line.rstrip()[:300]}", file=sys.stderr)
                continue
            if not got_hello and msg.get("type") == "hello":
                got_hello = True
                hello_q.put(msg)
                continue
            # routed by id, read by the request that waits for it (validated there, as the answer it expects)
            with self._lock:
                target = self._pending.get(str(msg.get("id")))
            if target:
                target[1].put(msg)
            else:
                self._unrouted(msg)
        # EOF: the driver is gone. Everything in flight on it learns why.
        if not got_hello:
            hello_q.put(None)
        reason = self._death_reason(proc)
        with self._lock:
            waiting = [q for owner, q in self._pending.values() if owner is proc]
            unexpected = got_hello and self.proc is proc and not self._closing
        for q in waiting:
            q.put(_Died(reason))
        if unexpected:  # a healthy driver died: start the next one now, so the next run finds it warm
            print(f"[{self.label}] {reason}; restarting", file=sys.stderr)
            threading.Thread(target=self._restart_quietly, daemon=True).start()

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line.rstrip())
            sys.stderr.write(f"[{self.label} {proc.pid}] {line}")
        sys.stderr.flush()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._kill(proc)

    # ---- requests
    def send_raw(self, line: str) -> None:
        """Write one raw line (tests use it for malformed input)."""
        self.ensure()
        assert self.proc is not None and self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(line if line.endswith("\n") else line + "\n")
            self.proc.stdin.flush()

    def _unrouted(self, msg: dict[str, Any]) -> None:
        """A line for no request in flight: an error for a line the driver could not read (tests read them)."""
        try:
            self.unrouted.put(ErrorAnswer.model_validate(msg))
        except ValidationError as exc:
            print(f"[{self.label}] a line for no request: {exc}", file=sys.stderr)

    def request(self, payload: Request | dict[str, Any], expect: type[A]) -> Reply[A]:
        """Send one request and wait for its terminal line (its events inside), read as `expect` or an `error`.
        Raises DriverDied, or ProtocolError for a line that is neither. A dict is sent as it is (tests send
        malformed requests)."""
        line = payload.model_dump(mode="json") if isinstance(payload, BaseModel) else payload
        t0 = time.perf_counter()
        self.ensure()
        waited_s = time.perf_counter() - t0  # > 0 when this request waited for a driver (re)start
        rid = f"r{next(self._ids)}"
        q: queue.Queue[dict[str, Any] | _Died] = queue.Queue()
        with self._lock:
            proc = self.proc
            if proc is None or proc.poll() is not None:
                raise DriverDied("the Node driver exited before the request was sent")
            self._pending[rid] = (proc, q)
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps({**line, "id": rid}) + "\n")
                proc.stdin.flush()
            except OSError as exc:
                self._pending.pop(rid, None)
                raise DriverDied(f"cannot write to the Node driver (pid {proc.pid}): {exc}") from None
        try:
            msg = q.get()
            if isinstance(msg, _Died):
                raise DriverDied(f"{msg.reason} while request {rid} ({line.get('op')}) was in flight")
            return Reply(read_answer(msg, expect), driver_pid=proc.pid, waited_s=round(waited_s, 3))
        finally:
            with self._lock:
                self._pending.pop(rid, None)
