"""``apply_deltas``: LangGraph's ``_messages_delta_reducer`` (langgraph 1.2.24), exactly.

Each message of each write is applied on its own, in order: an id already in the state
is replaced in place, a new id is appended, a remove takes effect at once (an unknown id
is a no-op), ``__remove_all__`` clears everything before it, an id-less message is
appended. Being a left fold of that one step, any split of the writes into calls gives
the same result: ``apply_deltas(apply_deltas(s, xs), ys) == apply_deltas(s, xs + ys)``.

Why it is fast: a duplicate-free state is held as one ``dict`` from id to message, and
a dict keeps insertion order, so "replace in place" is ``d[id] = m``, "append" is the
same statement, and "remove" is ``d.pop(id)``; the result is ``list(d.values())``. The
result is a :class:`Messages` list that keeps that dict, so the next call on it copies
the dict instead of re-indexing the whole thread. A state with duplicate ids (only
``add_messages`` can make one) takes the slot-by-slot path, which reproduces LangGraph's
"only the last copy is indexed" exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import Any, SupportsIndex

from threadfold.core.convert import to_message, to_messages
from threadfold.core.fold import merge_chunk
from threadfold.core.messages import (
    MESSAGE_CLASSES,
    REMOVE_ALL_MESSAGES,
    BaseMessage,
    RemoveMessage,
)

_get_id = attrgetter("id")


class Messages(list[BaseMessage]):
    """A reducer result: a plain list that remembers its id index while unchanged.

    Any in-place change drops the remembered index (messages are frozen, so their ids
    cannot change under it); the list then behaves like any other list.
    """

    __slots__ = ("_index",)

    def __init__(
        self, items: Iterable[BaseMessage] = (), index: dict[Any, BaseMessage] | None = None
    ):
        super().__init__(items)
        self._index = index

    def index_copy(self) -> dict[Any, BaseMessage] | None:
        """A private copy of the id index, or None when the list was changed."""
        return None if self._index is None else self._index.copy()

    def _forget(self) -> None:
        self._index = None

    def __setitem__(self, key: Any, value: Any) -> None:
        self._forget()
        super().__setitem__(key, value)

    def __delitem__(self, key: SupportsIndex | slice) -> None:
        self._forget()
        super().__delitem__(key)

    def __iadd__(self, other: Iterable[BaseMessage]) -> Messages:  # type: ignore[override,misc]
        self._forget()
        super().__iadd__(other)
        return self

    def __imul__(self, n: SupportsIndex) -> Messages:
        self._forget()
        super().__imul__(n)
        return self

    def append(self, value: BaseMessage) -> None:
        self._forget()
        super().append(value)

    def extend(self, values: Iterable[BaseMessage]) -> None:
        self._forget()
        super().extend(values)

    def insert(self, i: SupportsIndex, value: BaseMessage) -> None:
        self._forget()
        super().insert(i, value)

    def pop(self, i: SupportsIndex = -1) -> BaseMessage:
        self._forget()
        return super().pop(i)

    def remove(self, value: BaseMessage) -> None:
        self._forget()
        super().remove(value)

    def clear(self) -> None:
        self._forget()
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._forget()
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self._forget()
        super().reverse()


def flatten(writes: Iterable[Any]) -> list[Any]:
    """Writes to message-likes: a list write is spread, anything else is one message."""
    flat: list[Any] = []
    for write in writes:
        if isinstance(write, list):
            flat.extend(write)
        else:
            flat.append(write)
    return flat


def _after_remove_all(messages: list[BaseMessage]) -> int | None:
    """Index just past the last ``__remove_all__``, or None when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if type(m) is RemoveMessage and m.id == REMOVE_ALL_MESSAGES:
            return i + 1
    return None


_CLASSES: frozenset[type] = frozenset(MESSAGE_CLASSES)


def apply_deltas(
    state: Sequence[Any], writes: Iterable[Any], *, merge_chunks: bool = False
) -> list[BaseMessage]:
    """The delta reducer: ``state`` folded with every message of every write.

    ``merge_chunks`` (off by default, not LangGraph's behaviour) adds a chunk to a stored
    chunk of the same id with LangChain's ``+`` instead of replacing it; see
    :func:`threadfold.core.fold.merge_chunk`.
    """
    if state is None:
        raise TypeError("state must be a list of messages, not None")
    index = state.index_copy() if isinstance(state, Messages) else None
    if index is None:
        current = to_messages(state, "state") if _needs_conversion(state) else state
        index = dict(zip(map(_get_id, current), current, strict=True))
        if len(index) != len(current):
            return _fold_slots(list(current), writes, merge_chunks)
    return _fold_dict(index, writes, merge_chunks)


def _needs_conversion(state: Sequence[Any]) -> bool:
    return not all(isinstance(m, BaseMessage) for m in state)


def _fold_dict(index: dict[Any, BaseMessage], writes: Iterable[Any], merge: bool) -> Messages:
    """One pass over the writes: convert what is not a message yet, and fold it in.

    A ``__remove_all__`` clears the index where it stands; LangGraph instead keeps only
    what follows the last one, which leaves the same state. Conversion errors surface
    at the same message either way, since LangGraph converts every message first.
    """
    k = 0
    for write in writes:
        for item in write if isinstance(write, list) else (write,):
            m = item if type(item) in _CLASSES else to_message(item, f"writes[{k}]")
            k += 1
            key = m.id
            if key is None:
                index[object()] = m  # id-less: appended, never matched again
            elif type(m) is RemoveMessage:
                if key == REMOVE_ALL_MESSAGES:
                    index.clear()
                else:
                    index.pop(key, None)
            elif merge:
                index[key] = merge_chunk(index.get(key), m)
            else:
                index[key] = m
    return Messages(index.values(), index)


_TOMBSTONE: Any = object()


def _fold_slots(result: list[Any], writes: Iterable[Any], merge: bool) -> Messages:
    """LangGraph's own slot algorithm, for a state with duplicate ids (only add_messages
    makes those): every message converted first, then the part after the last
    ``__remove_all__`` (which empties the state, duplicates and all) folded in."""
    incoming = to_messages(flatten(writes), "writes")
    cut = _after_remove_all(incoming)
    if cut is not None:
        return _fold_dict({}, [incoming[cut:]], merge)
    slot = {m.id: i for i, m in enumerate(result) if m.id is not None}
    for m in incoming:
        if m.id is None:
            result.append(m)
        elif type(m) is RemoveMessage:
            if m.id in slot:
                result[slot.pop(m.id)] = _TOMBSTONE
        elif m.id in slot:
            at = slot[m.id]
            result[at] = merge_chunk(result[at], m) if merge else m
        else:
            slot[m.id] = len(result)
            result.append(m)
    return Messages(m for m in result if m is not _TOMBSTONE)
