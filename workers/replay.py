"""Replaying a thread from its retained log: audit, rebuild, and time travel.

With ``retention_seconds`` set, applied entries stay in the log, so the one-delta-at-a-
time fold of the log is an independent recomputation of the thread. It is exact only
while the log is whole (retention never trimmed it); a thread whose log was trimmed is
reported as not replayable rather than compared with a partial fold.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from core.codec import decode_messages, encode_stored
from core.dump import dump_messages
from core.fold import ThreadFold, replay_fold
from core.messages import BaseMessage
from core.pages import fingerprint, record
from workers import ops
from workers.redis_io import Call, run
from workers.store import Store

PAGE = 1000


class NotReplayable(Exception):
    """Raised when a thread's log no longer holds its whole history (or it never existed)."""


@dataclass(frozen=True, slots=True)
class Replayed:
    """A replay up to ``version``: the folded thread and how many entries it took."""

    version: str
    entries: int
    fold: ThreadFold

    @property
    def messages(self) -> list[BaseMessage]:
        return self.fold.ordered()


def _entries(store: Store, ref: str, upto: str) -> Iterator[tuple[str, bytes]]:
    log = store.keyspace.thread(ref).log
    start = "-"
    while True:
        page = store.client.xrange(log, start, upto, count=PAGE) or []
        for entry_id, fields in page:
            yield ops.text(entry_id), ops.log_payload(fields)
        if len(page) < PAGE:
            return
        start = "(" + ops.text(page[-1][0])


def replay(store: Store, ref: str, upto: str = "+", *, merge_chunks: bool = False) -> Replayed:
    """The fold of the log's entries up to ``upto`` (inclusive), from an empty thread."""
    blocker = ops.replay_blocker(
        ref, store.client.hmget(store.keyspace.thread(ref).meta, ["e", "rb"])
    )
    if blocker:
        raise NotReplayable(blocker)
    seen: list[str] = []

    def batches() -> Iterator[list[BaseMessage]]:
        for entry_id, payload in _entries(store, ref, upto):
            seen.append(entry_id)
            yield decode_messages(payload)

    fold = replay_fold(batches(), merge_chunks=merge_chunks)
    return Replayed(seen[-1] if seen else "0-0", len(seen), fold)


@dataclass(frozen=True, slots=True)
class Audit:
    """An audit of one thread: live state vs its replay at the same version."""

    ref: str
    version: str
    entries: int
    differences: list[str]


def audit(store: Store, ref: str, *, merge_chunks: bool = False) -> Audit:
    """Compare the live state with the replay of the log up to the live version."""
    live = store.read_state(ref)
    if live is None:
        raise NotReplayable(f"thread {ref} has never been written")
    replayed = replay(store, ref, live.version, merge_chunks=merge_chunks)
    return Audit(
        ref,
        live.version,
        replayed.entries,
        _differences(dump_messages(live.messages), dump_messages(replayed.messages)),
    )


def _differences(live: list[dict[str, object]], replayed: list[dict[str, object]]) -> list[str]:
    found = []
    if len(live) != len(replayed):
        found.append(f"{len(live)} messages live, {len(replayed)} replayed")
    for i, (a, b) in enumerate(zip(live, replayed, strict=False)):
        if a != b:
            found.append(
                f"message {i}: live id {a.get('id')!r} differs from replayed id {b.get('id')!r}"
                if a.get("id") != b.get("id")
                else f"message {i} ({a.get('id')!r}) differs"
            )
    return found


def rebuild(store: Store, ref: str, *, merge_chunks: bool = False, attempts: int = 5) -> Audit:
    """Replace the live state with the replay, fenced by the cursor like any commit."""
    for _ in range(attempts):
        found = audit(store, ref, merge_chunks=merge_chunks)
        if not found.differences:
            return found
        replayed = replay(store, ref, found.version, merge_chunks=merge_chunks)
        k = store.keyspace.thread(ref)
        args: list[str | bytes | int] = [
            found.version,
            replayed.fold.next_position,
            len(replayed.fold.positions),
        ]
        messages = replayed.fold.messages
        assert messages is not None
        for position, key in sorted((p, key) for key, p in replayed.fold.positions.items()):
            body = encode_stored(messages[key])
            args += [fingerprint(key), position, record(key, position, body)]
        if int(run(store.client, Call(ops.REBUILD, [k.meta, *k.state], args))):
            return found
    raise NotReplayable(f"thread {ref} kept moving; rebuild gave up after {attempts} attempts")
