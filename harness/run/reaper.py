"""No process outlives its run: a worker's descendants are ended when their segment ends.

A framework's CLI, an MCP server or a `--loop-cmd` program may start children that leave the worker's process
group (`setsid`, a daemon's double fork), so killing the group misses them. The worker is therefore a child
subreaper (Linux): an orphaned descendant is reparented to the worker instead of init, and stays in its process
tree. Around each segment the worker notes its descendants (`descendants()`: what the adapter keeps across
segments, such as the Vercel driver started at warm-up) and afterwards ends every other one (`end_strays()`).
The pool, which kills a hung worker from outside, ends the worker's whole tree first (`kill_descendants()`);
a worker whose runner is gone does the same to itself, and one that exits ends what left its group
(`end_escaped()`).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
KILL_ROUNDS = 20  # a stray may fork while its siblings are killed: look again, this many times at most
REAP_S = 2.0  # how long to wait for the killed to be gone (SIGKILL is not refused: milliseconds in practice)


def become_subreaper() -> bool:
    """Make this process a child subreaper: orphans among its descendants become its children (prctl(2)).
    Linux only; elsewhere a no-op (False): there, an escaped descendant is reparented to init and only what is
    still attached to the tree when a segment ends is found and killed."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        print(f"[worker] prctl(PR_SET_CHILD_SUBREAPER) failed: {os.strerror(err)}", file=sys.stderr)
        return False
    return True


def descendants(root: psutil.Process | None = None) -> set[psutil.Process]:
    """Every live or zombie descendant of `root` (this process by default). psutil.Process compares by pid and
    start time, so a reused pid is not mistaken for a process noted earlier."""
    try:
        return set((root or psutil.Process()).children(recursive=True))
    except psutil.NoSuchProcess:
        return set()


def _running(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _kill(p: psutil.Process) -> None:
    try:
        p.kill()  # psutil checks the start time first: never a reused pid
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        pass


def kill_descendants(root: psutil.Process, keep: set[psutil.Process] | frozenset[psutil.Process] = frozenset()
                     ) -> set[psutil.Process]:
    """SIGKILL every running descendant of `root` not in `keep`, again until none is left (a stray may fork
    or be reparented while the others die). Returns every descendant found not in `keep`, zombies included."""
    strays: set[psutil.Process] = set()
    killed: set[psutil.Process] = set()
    for _ in range(KILL_ROUNDS):
        found = descendants(root) - keep
        strays |= found
        targets = {p for p in found - killed if _running(p)}
        if not targets:
            break
        for p in targets:
            _kill(p)
        killed |= targets
    return strays


def _reap(procs: set[psutil.Process]) -> None:
    """Wait for the killed to be gone; collect those that are this process's children (adopted orphans too),
    so no zombie is left. Only these pids are waited for (never waitpid(-1)): a kept child is never reaped
    behind the back of the Popen that owns it."""
    pending = set(procs)
    deadline = time.monotonic() + REAP_S
    while pending:
        for p in list(pending):
            try:
                if os.waitpid(p.pid, os.WNOHANG)[0] != 0:
                    pending.discard(p)
                    continue
            except ChildProcessError:  # not (or no longer) ours: done once gone, or a zombie its parent reaps
                if not _running(p):
                    pending.discard(p)
                    continue
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.005)
    for p in pending:
        print(f"[worker] process {p.pid} still there {REAP_S:.0f} s after SIGKILL", file=sys.stderr)


def end_strays(before: set[psutil.Process]) -> set[psutil.Process]:
    """After a segment: kill every descendant of this process that was not there before it (`before`, from
    `descendants()`), and reap them. Returns what was ended (for logs and tests)."""
    strays = kill_descendants(psutil.Process(), keep=before)
    _reap(strays)
    return strays


def end_escaped() -> set[psutil.Process]:
    """When the worker exits: kill the descendants that left its process group (the pool's killpg ends the
    rest, the adapter's long-lived children included, as it always did). Returns what was ended."""
    group = os.getpgrp()

    def in_group(p: psutil.Process) -> bool:
        try:
            return os.getpgid(p.pid) == group
        except OSError:
            return False

    return end_strays({p for p in descendants() if in_group(p)})
