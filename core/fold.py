"""The incremental delta fold the workers use: O(batch) per batch, with its net effect.

Same step as :func:`threadfold.core.delta.apply_deltas`, kept between batches: a thread is an
insertion-ordered ``id -> message`` dict plus ``id -> position`` numbers. Positions grow
monotonically and are never reused, so "append" takes the next number, "replace in
place" keeps the old one, and a re-add after a remove takes a new one, which is exactly
where the delta reducer puts it. Sorting by position therefore gives the list order,
which is what lets a store keep messages in a hash and their order in a sorted set and
commit only what a batch changed.

The fold can also start from a *sparse* view of a thread: only the positions of the ids
a batch mentions, and the next free position. That is all a batch needs to know, so a
worker never loads a whole thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from threadfold.core.chunks import add_chunks
from threadfold.core.errors import ChunkMergeError
from threadfold.core.messages import REMOVE_ALL_MESSAGES, BaseMessage, RemoveMessage, is_chunk
from threadfold.core.servable import renders


class Effect:
    """What a batch did, relative to the state before it.

    ``cleared``: a ``__remove_all__`` emptied the thread first. ``upserts``: id ->
    (position, message) to write. ``removed``: ids that existed before and must go
    (after a clear, nothing is listed here: the clear took them).

    A plain slotted class: one is made per batch, and a dataclass with default
    factories cost a third of a one-delta batch.
    """

    __slots__ = ("cleared", "removed", "upserts")

    def __init__(
        self,
        cleared: bool = False,
        upserts: dict[str, tuple[int, BaseMessage]] | None = None,
        removed: set[str] | None = None,
    ) -> None:
        self.cleared = cleared
        self.upserts: dict[str, tuple[int, BaseMessage]] = {} if upserts is None else upserts
        self.removed: set[str] = set() if removed is None else removed

    def is_empty(self) -> bool:
        return not (self.cleared or self.upserts or self.removed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Effect):
            return NotImplemented
        return (self.cleared, self.upserts, self.removed) == (
            other.cleared,
            other.upserts,
            other.removed,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"Effect(cleared={self.cleared}, upserts={self.upserts!r}, removed={self.removed!r})"


class ThreadFold:
    """A thread's state under the delta reducer, updated batch by batch.

    ``positions`` must hold every id of the thread that the coming batches can mention
    (all of them for a full fold, or those a batch mentions for a sparse one).
    ``messages`` (their bodies) are tracked only when asked for: a full fold that can
    list the thread (``track=True``), or chunk merging, which adds to the stored body.
    Messages must carry ids (ingestion stamps them): an id-less message has no key to
    store it under, and is refused.
    """

    __slots__ = ("_effect", "merge_chunks", "messages", "next_position", "positions")

    def __init__(
        self,
        positions: Mapping[str, int] | None = None,
        next_position: int = 0,
        messages: Mapping[str, BaseMessage] | None = None,
        *,
        merge_chunks: bool = False,
        track: bool = False,
    ) -> None:
        self.positions: dict[str, int] = dict(positions or {})
        tracked = track or merge_chunks or messages is not None
        self.messages: dict[str, BaseMessage] | None = dict(messages or {}) if tracked else None
        self.next_position = next_position
        self.merge_chunks = merge_chunks
        self._effect = Effect()

    @classmethod
    def from_messages(
        cls, messages: Iterable[BaseMessage], *, merge_chunks: bool = False
    ) -> ThreadFold:
        """A full fold seeded with a duplicate-free, id-carrying message list."""
        fold = cls(track=True, merge_chunks=merge_chunks)
        fold.apply(messages)
        fold.take_effect()
        return fold

    def apply(self, batch: Iterable[BaseMessage]) -> None:
        """Fold ``batch`` in; the effect accumulates until :meth:`take_effect`."""
        if self.messages is not None:
            self._apply_tracked(batch, self.messages)
            return
        # The workers' hot loop: one dict lookup and one store per delta. (Keys are typed
        # loosely here: a None id is caught when it misses the dict, not per delta.)
        positions: dict[Any, int] = self.positions
        upserts: dict[Any, tuple[int, BaseMessage]] = self._effect.upserts
        removed: set[Any] = self._effect.removed
        nxt = self.next_position
        try:
            for m in batch:
                key = m.id
                if type(m) is RemoveMessage:
                    self._remove(key)
                    upserts, removed = self._effect.upserts, self._effect.removed
                    continue
                pos = positions.get(key)
                if pos is None:
                    _require_id(key)
                    pos = positions[key] = nxt
                    nxt += 1
                upserts[key] = (pos, m)
                if removed:
                    removed.discard(key)
        finally:
            self.next_position = nxt

    def _apply_tracked(
        self, batch: Iterable[BaseMessage], messages: dict[str, BaseMessage]
    ) -> None:
        """The same step, keeping bodies (and merging chunks when asked)."""
        for m in batch:
            if type(m) is RemoveMessage:
                self._remove(m.id)
                continue
            key = _require_id(m.id)
            pos = self.positions.get(key)
            if pos is None:
                pos = self.positions[key] = self.next_position
                self.next_position += 1
                stored = m
            elif self.merge_chunks:
                stored = merge_chunk(messages.get(key), m)
            else:
                stored = m
            messages[key] = stored
            self._effect.upserts[key] = (pos, stored)
            self._effect.removed.discard(key)

    def _remove(self, key: str | None) -> None:
        if key == REMOVE_ALL_MESSAGES:
            self.positions.clear()
            if self.messages is not None:
                self.messages.clear()
            self._effect = Effect(cleared=True)
            return
        known = _require_id(key)
        if self.positions.pop(known, None) is not None:
            # Listed even when the id was new in this batch: deleting a missing field
            # is a no-op for the store, and knowing costs a lookup per remove.
            if self.messages is not None:
                self.messages.pop(known, None)
            self._effect.upserts.pop(known, None)
            self._effect.removed.add(known)

    def take_effect(self) -> Effect:
        """The net effect since the last call, and a fresh one started."""
        effect, self._effect = self._effect, Effect()
        return effect

    def ordered(self) -> list[BaseMessage]:
        """The full thread in list order (for a tracking, full fold)."""
        if self.messages is None:
            raise ValueError("ordered() needs a fold made with track=True")
        return sorted(self.messages.values(), key=lambda m: self.positions[str(m.id)])

    def __repr__(self) -> str:
        return f"ThreadFold({len(self.positions)} ids, next_position={self.next_position})"


def _require_id(key: str | None) -> str:
    if key is None:
        raise ValueError("the incremental fold needs message ids; stamp them at ingestion")
    return key


def merge_chunk(previous: BaseMessage | None, incoming: BaseMessage) -> BaseMessage:
    """The opt-in chunk step: a chunk arriving on a chunk of the same id is added to it.

    LangChain's chunk ``+``, applied one arrival at a time in log order (it is not
    associative, so nothing is ever pre-combined). Where ``+`` raises for the pair
    (different tool_call_ids, roles or names), the new chunk replaces the old one, as
    it would without merging: a fold step must not fail on a valid message.

    The same holds where the sum has no OpenAI form although both chunks have one
    (merged blocks keep the first block's type and gain the other's keys: an Anthropic
    image block that gains a ``text`` key becomes an image data block without a url):
    the state must stay servable, and ingestion checked only each chunk on its own.
    """
    if previous is None or not (is_chunk(previous) and is_chunk(incoming)):
        return incoming
    try:
        merged = add_chunks(previous, incoming)
    except ChunkMergeError:
        return incoming
    return merged if renders(merged) else incoming


def replay_fold(batches: Iterable[list[BaseMessage]], *, merge_chunks: bool = False) -> ThreadFold:
    """A thread rebuilt from nothing by folding its log's deltas in order (replay)."""
    fold = ThreadFold(track=True, merge_chunks=merge_chunks)
    for batch in batches:
        fold.apply(batch)
    fold.take_effect()
    return fold
