"""Threads as a deployment's store holds them, for harnesses that run beside its Redis
(the engine's tests, in-process benchmarks): a thread's state as stored
(:func:`state_dump`), every backlog drained (:func:`wait_drained`), and the wake-ups a
producer sent (:class:`CountingWaker`).

What a state must equal is still the oracle's (:class:`threadfold.testing.Ledger`);
these read the engine's own store, below the client contract (the caller passes its
``Store``), so they are imported by name, never by ``import threadfold.testing``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from threadfold.core import dump_messages

if TYPE_CHECKING:  # the engine's types only: what is passed in is the caller's
    from threadfold.workers.wiring import Store, Waker


def state_dump(store: Store, ref: str) -> list[dict[str, Any]]:
    """The thread's state as stored, dumped (empty when there is none)."""
    page = store.read_state(ref)
    return [] if page is None else dump_messages(page.messages)


def wait_drained(store: Store, refs: Iterable[str], timeout: float) -> None:
    """Until every thread has no backlog (checked through the status the API serves)."""
    pending = set(refs)

    def done() -> bool:
        for ref in list(pending):
            status = store.status(ref)
            if status is not None and status.backlog == 0:
                pending.discard(ref)
        return not pending

    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            raise TimeoutError(f"threads still with a backlog: {sorted(pending)[:5]}")
        time.sleep(0.1)


class CountingWaker:
    """A waker that counts what it passes on to ``inner``: refs woken and publishes."""

    def __init__(self, inner: Waker) -> None:
        self.inner = inner
        self.sent = 0
        self.publishes = 0

    def wake(self, refs: Sequence[str]) -> None:
        self.sent += len(refs)
        self.publishes += 1
        self.inner.wake(refs)
