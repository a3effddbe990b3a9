"""Wake-ups off the caller's path, coalesced across calls.

Publishing a Celery message is blocking, CPU-heavy work (see
:class:`threadfold.workers.runtime.app.CeleryWaker`): about a millisecond of a worker's CPU to run
the
task, a few hundred microseconds of the sender's to publish it. A caller that enqueues
one delta per call (an API process answering many requests, a backend's request
threads, an agent loop) would publish one message per call; instead the refs woken
within a short window are published together, from a thread of their own, while the
callers go on. A lost wake-up costs latency only: the sweeper re-wakes any thread
whose flag lapses with a backlog.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Sequence
from types import TracebackType
from typing import Protocol

log = logging.getLogger("threadfold.wakeup")

#: Under a steady stream of wake-ups, at most one publish per this many seconds from one
#: waker (a lone wake-up waits only its window). A publish costs ~0.7 ms of the sender's
#: CPU (kombu builds a Redis client and a pipeline for each) and its task ~1.2 ms of a
#: worker's whatever it carries, so where every call wakes a thread of its own (one delta
#: per thread per call) publishing per window made a task per call or two; spaced,
#: a task carries the refs of the whole interval. Measured in docs/benchmarks.md (issue
#: 24): one-call-per-delta writers 2.1x the deltas/s at half the CPU per delta.
SPACING = 0.02


class Waker(Protocol):
    """Sends the wake-up task of threads whose flag the caller set."""

    def wake(self, refs: Sequence[str]) -> None: ...


class AsyncWaker(Protocol):
    """The same, for asyncio callers."""

    async def wake(self, refs: Sequence[str]) -> None: ...


class ThreadedWaker:
    """Each call published from a worker thread (simple; for low rates and tests)."""

    def __init__(self, waker: Waker) -> None:
        self.waker = waker

    async def wake(self, refs: Sequence[str]) -> None:
        await asyncio.to_thread(self.waker.wake, list(refs))


class CoalescingWaker:
    """Refs woken within ``window`` seconds are published together, from a thread.

    At most one publish runs at a time; refs that arrive meanwhile wait for the next,
    so the batch grows with the load instead of the number of publishes.
    """

    def __init__(self, waker: Waker, window: float = 0.001) -> None:
        self.waker = waker
        self.window = window
        self._pending: dict[str, None] = {}
        self._task: asyncio.Task[None] | None = None
        self._last = -math.inf  # when the last publish began (monotonic)

    async def wake(self, refs: Sequence[str]) -> None:
        self._pending.update(dict.fromkeys(refs))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._publish())

    async def _publish(self) -> None:
        while self._pending:
            await asyncio.sleep(max(self.window, self._last + SPACING - time.monotonic()))
            refs, self._pending = list(self._pending), {}
            self._last = time.monotonic()
            try:
                await asyncio.to_thread(self.waker.wake, refs)
            except Exception:  # the sweeper recovers lost wake-ups
                log.warning("could not publish %d wake-up(s)", len(refs), exc_info=True)

    async def close(self) -> None:
        """Publish what is pending (at shutdown)."""
        if self._task is not None:
            await self._task


class BackgroundWaker:
    """For synchronous producers: ``wake`` records the refs and returns; a daemon thread
    publishes the refs of all calls made within ``window`` seconds as one batch.

    Thread-safe (one :class:`~threadfold.workers.ingest.producer.Producer` may serve a backend's
    request
    threads), and safe across ``fork``: a child starts with nothing pending (the
    parent publishes its own) and its own publishing thread on its first wake-up.
    :meth:`close` (or leaving a ``with`` block) publishes what is pending; a process
    that exits without it loses at most one window of wake-ups, which the sweeper
    recovers within a sweep period.
    """

    def __init__(self, waker: Waker, window: float = 0.005) -> None:
        # Checked here: a bad window would end the publishing thread on its first wait.
        if (
            isinstance(window, bool)
            or not isinstance(window, int | float)
            or not 0 <= window < math.inf
        ):
            raise ValueError(f"window: expected a finite number of seconds >= 0, got {window!r}")
        self.waker = waker
        self.window = float(window)
        self._closed = False
        self._reset()
        _LIVE.add(self)

    def _reset(self) -> None:
        """Fresh state: at construction, and in a forked child (whose copy of the lock
        may have been held by a thread that does not exist there)."""
        self._lock = threading.Lock()
        self._due = threading.Event()
        self._stop = threading.Event()  # set by close: no more gathering
        if self._closed:
            self._stop.set()
        self._pending: dict[str, None] = {}
        self._thread: threading.Thread | None = None
        self._last = -math.inf  # when the last publish began (monotonic)

    def wake(self, refs: Sequence[str]) -> None:
        with self._lock:
            closed = self._closed
            if not closed:
                self._pending.update(dict.fromkeys(refs))
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, name="threadfold-wakeups", daemon=True
                    )
                    self._thread.start()
        if closed:  # after close: published by the caller, as a plain waker would
            self.waker.wake(refs)
        else:
            self._due.set()

    def _run(self) -> None:
        try:
            while True:
                self._due.wait()
                # Let the calls of one window gather, and a steady stream's of SPACING.
                self._stop.wait(max(self.window, self._last + SPACING - time.monotonic()))
                with self._lock:
                    refs, self._pending = list(self._pending), {}
                    self._due.clear()
                    self._last = time.monotonic()
                    closed = self._closed
                if refs:
                    try:
                        self.waker.wake(refs)
                    except Exception:  # the deltas are stored: the sweeper recovers them
                        log.warning("could not publish %d wake-up(s)", len(refs), exc_info=True)
                if closed:
                    return
        finally:
            with self._lock:  # whatever ended the thread, the next wake-up starts another
                if self._thread is threading.current_thread():
                    self._thread = None

    def close(self, timeout: float | None = 10.0) -> None:
        """Publish what is pending and stop the thread; later wake-ups are published
        by their callers."""
        with self._lock:
            self._closed = True
            thread = self._thread
            orphans: list[str] = []
            if thread is None:
                orphans, self._pending = list(self._pending), {}
        self._stop.set()
        if orphans:  # left by a thread that ended abnormally
            self.waker.wake(orphans)
        if thread is not None:
            self._due.set()
            thread.join(timeout)
            if thread.is_alive():
                log.warning(
                    "wake-ups still publishing after %s s; the sweeper has the rest", timeout
                )

    def __enter__(self) -> BackgroundWaker:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_LIVE: weakref.WeakSet[BackgroundWaker] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for waker in list(_LIVE):
        waker._reset()


os.register_at_fork(after_in_child=_after_fork_in_child)
