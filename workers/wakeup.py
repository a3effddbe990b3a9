"""Wake-ups from asyncio code: off the event loop, and coalesced across requests.

Publishing a Celery message is blocking, CPU-heavy work (see
:class:`workers.app.CeleryWaker`). An API process answering many requests at once
would otherwise publish one message per request from its event loop; instead the refs
woken within a short window are published together, from a worker thread, while the
event loop keeps serving. A lost wake-up costs latency only: the sweeper re-wakes any
thread whose flag lapses with a backlog.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol

log = logging.getLogger("threadfold.wakeup")


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

    async def wake(self, refs: Sequence[str]) -> None:
        self._pending.update(dict.fromkeys(refs))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._publish())

    async def _publish(self) -> None:
        while self._pending:
            await asyncio.sleep(self.window)
            refs, self._pending = list(self._pending), {}
            try:
                await asyncio.to_thread(self.waker.wake, refs)
            except Exception:  # the sweeper recovers lost wake-ups
                log.warning("could not publish %d wake-up(s)", len(refs), exc_info=True)

    async def close(self) -> None:
        """Publish what is pending (at shutdown)."""
        if self._task is not None:
            await self._task
