"""What the replay tests share: threads written with every accepted delta recorded, and
the oracle a replayed state is checked against (the one-delta-at-a-time fold of the log
prefix a version names)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from threadfold.core import dump_messages
from threadfold.testing import Ledger, fold, version_key
from threadfold.workers.ingest.producer import Delta, Producer


class NoWake:
    """These tests drain by hand: wake-ups go nowhere."""

    def wake(self, refs: Sequence[str]) -> None:
        del refs


def message(tag: str, n: int) -> dict[str, Any]:
    """A delta's one message: appends mostly, an update of an earlier id now and then
    (ids are the tag's, so two incarnations of a thread never share one)."""
    ident = f"{tag}-{n // 3 if n % 3 == 2 else n}"  # every third updates an earlier id
    return {"role": "user" if n % 2 else "assistant", "content": f"{tag} {n}", "id": ident}


#: A delta as recorded: its version, its messages, the ids they were stamped with.
Record = tuple[str, list[Any], list[str]]


class Writer:
    """Appends deltas to threads, recording each accepted one (thread-safe)."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.sent = Ledger()
        self.lock = threading.Lock()

    def write(self, thread: str, count: int, tag: str, *, bulk: int = 200) -> list[Record]:
        """``count`` one-message deltas to ``thread``, as recorded (version first)."""
        written: list[Record] = []
        for start in range(0, count, bulk):
            batch = [[message(tag, n)] for n in range(start, min(count, start + bulk))]
            done = self.producer.enqueue_many([Delta(thread, m) for m in batch])
            with self.lock:
                for messages, result in zip(batch, done, strict=True):
                    self.sent.add(f"_/{thread}", result.version, messages, result.ids)
                    written.append((result.version, messages, list(result.ids)))
        return written

    def deltas(self, ref: str) -> list[Record]:
        with self.lock:
            return [(d.version, d.messages, d.ids) for d in self.sent.deltas(ref)]


class Oracle:
    """The fold of a thread's deltas up to a version, memoized by version; deltas are
    given as a list in version order (one incarnation of the thread)."""

    def __init__(self, deltas: Sequence[Record]) -> None:
        self.deltas = list(deltas)
        self.keys = [version_key(d[0]) for d in self.deltas]
        self.memo: dict[str, list[dict[str, Any]]] = {}

    def holds(self, version: str) -> bool:
        """Whether ``version`` is one of this incarnation's entries."""
        key = version_key(version)
        return any(k == key for k in self.keys)

    def latest(self, asked: str) -> str | None:
        """The version of the state at ``asked``: its last entry at or before it."""
        key = version_key(asked)
        found = [d[0] for d, k in zip(self.deltas, self.keys, strict=True) if k <= key]
        return found[-1] if found else None

    def at(self, version: str) -> list[dict[str, Any]]:
        if version not in self.memo:
            key = version_key(version)
            state = fold((m, ids) for v, m, ids in self.deltas if version_key(v) <= key)
            self.memo[version] = dump_messages(state)
        return self.memo[version]
