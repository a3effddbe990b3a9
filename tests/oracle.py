"""The one-delta-at-a-time oracle: what producers were told, folded in version order.

The tests compare the pipeline's states with it, and so do the benchmarks (a number only
counts if the states it timed are right): this module is the one part of ``tests`` that
``bench`` imports, so it imports nothing but ``threadfold`` (a benchmark needs no more
of the tests than this file). With the fold come what checking against it needs: the
wake-ups producers sent (:class:`CountingWaker`), the state as stored
(:func:`state_dump`), and waiting for the workers to be done with what was sent
(:func:`wait_drained`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from threadfold.core import BaseMessage, apply_deltas, dump_messages, to_messages
from threadfold.workers.ingest.wakeup import Waker
from threadfold.workers.ops.processes import wait_until
from threadfold.workers.storage.store import Store


@dataclass
class Sent:
    """What producers were told: per thread, the accepted deltas with their stamped ids."""

    deltas: dict[str, list[tuple[str, list[Any], list[str]]]] = field(default_factory=dict)

    def add(self, ref: str, version: str, messages: list[Any], ids: Sequence[str]) -> None:
        self.deltas.setdefault(ref, []).append((version, messages, list(ids)))

    @property
    def count(self) -> int:
        """Deltas recorded, over all threads."""
        return sum(len(d) for d in self.deltas.values())

    def load_jsonl(self, path: Path) -> None:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if not row["duplicate"]:
                self.add(row["ref"], row["version"], row["messages"], row["ids"])

    def expected(self, ref: str) -> list[BaseMessage]:
        """The one-delta-at-a-time fold of the thread's accepted deltas, in version order."""
        state: list[BaseMessage] = []
        for _, messages, ids in sorted(self.deltas.get(ref, []), key=lambda d: version_key(d[0])):
            state = apply_deltas(state, [stamped(messages, ids)])
        return state


def version_key(version: str) -> tuple[int, int]:
    """``"1700000000000-3"`` -> ``(1700000000000, 3)``, unchecked: the versions come from
    the store's own answers, and the latency poller calls this in its loop."""
    ms, _, seq = version.partition("-")
    return int(ms), int(seq)


def stamped(messages: list[Any], ids: Sequence[str]) -> list[BaseMessage]:
    return [
        msgspec.structs.replace(m, id=i) for m, i in zip(to_messages(messages), ids, strict=True)
    ]


def state_dump(store: Store, ref: str) -> list[dict[str, Any]]:
    page = store.read_state(ref)
    return [] if page is None else dump_messages(page.messages)


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


def wait_drained(store: Store, refs: Iterable[str], timeout: float) -> None:
    """Until every thread has no backlog (checked through the status the API serves)."""
    pending = set(refs)

    def done() -> bool:
        for ref in list(pending):
            status = store.status(ref)
            if status is not None and status.backlog == 0:
                pending.discard(ref)
        return not pending

    wait_until(done, timeout, interval=0.1,
               message=f"threads still with a backlog: {sorted(pending)[:5]}")
