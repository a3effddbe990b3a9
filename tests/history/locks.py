"""Per-thread locks the driver takes: writes share a thread, a delete has it alone.

Why the model needs them. A write racing a ``DELETE`` of its thread may land in the old
incarnation (and vanish with it) or start the next one, and its answer does not say
which; the checker would have to guess. So writes (and hand-made poison entries) of a
thread exclude its deletes, and nothing else: reads, audits, rebuilds, retries, commits
and trims race everything, which is what is being tested.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class _ReadWrite:
    """Shared holders, an exclusive holder, and exclusive waiters, who go first (a
    delete would otherwise wait behind a stream of writers for as long as they last)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.sharing = 0
        self.alone = False
        self.waiting = 0

    def may_share(self) -> bool:
        return not self.alone and self.waiting == 0

    def may_take(self) -> bool:
        return not self.alone and self.sharing == 0


class ThreadLocks:
    """One shared/exclusive lock per thread ref."""

    def __init__(self, refs: Iterable[str]) -> None:
        self._locks = {ref: _ReadWrite() for ref in refs}

    @contextmanager
    def shared(self, refs: Iterable[str]) -> Iterator[None]:
        """Held on every ref at once; taken in sorted order, so two callers never wait
        for each other in a cycle."""
        taken: list[_ReadWrite] = []
        try:
            for ref in sorted(set(refs)):
                lock = self._locks[ref]
                with lock.cond:
                    lock.cond.wait_for(lock.may_share)
                    lock.sharing += 1
                taken.append(lock)
            yield
        finally:
            for lock in taken:
                with lock.cond:
                    lock.sharing -= 1
                    lock.cond.notify_all()

    @contextmanager
    def exclusive(self, ref: str) -> Iterator[None]:
        lock = self._locks[ref]
        with lock.cond:
            lock.waiting += 1
            lock.cond.wait_for(lock.may_take)
            lock.waiting -= 1
            lock.alone = True
        try:
            yield
        finally:
            with lock.cond:
                lock.alone = False
                lock.cond.notify_all()
