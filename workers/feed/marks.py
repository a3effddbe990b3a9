"""Followers mark their threads followed (FOLLOW, :mod:`threadfold.workers.storage.follow`).

A commit keeps its change event in the thread's feed, for followers that resume, only
while a follower marked the thread within the window (the feed's age limit): a thread
nobody follows, most of them, only publishes its events, and its commits skip the
feed's three writes. A live follower never depends on a mark: it hears every event on
the channel; a lapsed mark costs a follower that resumes a snapshot instead of the
events it missed, which is what a feed trimmed past its version costs it anyway.

A follower marks its thread when it starts (after it subscribed, before it reads where
it starts) and every :data:`~threadfold.workers.storage.follow.EVERY_SECONDS` while it
follows: a direct sync subscription by :class:`Due`, a hub (an API process's, an
AsyncClient's) for all of its threads at once by :class:`Marks`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Final, Protocol

from threadfold.workers.storage.follow import EVERY_SECONDS
from threadfold.workers.storage.store import Store

log = logging.getLogger(__name__)

#: Threads one FOLLOW pipeline marks at most (a hub following many marks in parts).
PART: Final = 500


class Marking(Protocol):
    """What marks threads (:class:`threadfold.workers.storage.astore.AsyncStore`)."""

    async def follow(self, refs: Sequence[str], window_ms: int) -> None: ...


class Due:
    """A sync follower's marks of its thread: :meth:`__call__` marks it when one is due."""

    def __init__(self, store: Store, ref: str, window_ms: int) -> None:
        self.store, self.ref, self.window_ms = store, ref, window_ms
        self.next_at = 0.0

    def __call__(self) -> None:
        if time.monotonic() >= self.next_at:
            self.now()

    def now(self) -> None:
        """Mark the thread now (a follower that starts or subscribes again)."""
        self.store.follow([self.ref], self.window_ms)
        self.next_at = time.monotonic() + EVERY_SECONDS


class Marks:
    """A hub's marks: each thread it starts to follow at once, all of them every
    :data:`EVERY_SECONDS` (:meth:`run`, the hub's task)."""

    def __init__(self, store: Marking, window_ms: int) -> None:
        self.store, self.window_ms = store, window_ms
        self.followed: set[str] = set()
        self._new: set[str] = set()
        self._kick = asyncio.Event()

    def watch(self, ref: str) -> None:
        self.followed.add(ref)
        self._new.add(ref)
        self._kick.set()

    def unwatch(self, ref: str) -> None:
        self.followed.discard(ref)
        self._new.discard(ref)

    async def run(self) -> None:
        """Mark, for ever: what is new when it comes, everything when a round is due."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            if not self._kick.is_set() and loop.time() < due:
                try:
                    async with asyncio.timeout(due - loop.time()):
                        await self._kick.wait()
                except TimeoutError:
                    pass
            self._kick.clear()
            if loop.time() >= due:
                refs, due = sorted(self.followed), loop.time() + EVERY_SECONDS
            else:
                refs = sorted(self._new)
            self._new.clear()
            await self._mark(refs)

    async def _mark(self, refs: list[str]) -> None:
        for at in range(0, len(refs), PART):
            try:
                await self.store.follow(refs[at : at + PART], self.window_ms)
            except Exception:  # the next round marks them again: this task must go on
                log.exception("feed hub: marking %d followed threads failed",
                              len(refs[at : at + PART]))
