"""``add_messages``: LangGraph's merging reducer (langgraph 1.2.24), exactly.

Offered for callers who need it. It is **not** batching-invariant (removes apply at the
end of a call, ``__remove_all__`` returns a raw tail, unknown removes raise), so the
workers never use it on batches; they use :func:`threadfold.core.delta.apply_deltas`.

One deliberate difference: messages are frozen, so ids are stamped on new objects
instead of mutating the caller's. Within a call the effect is the same (an id-less
message object passed twice, in either argument, gets one id; a chunk object or a dict
passed twice gets two, since LangGraph converts each occurrence to a new message), and
across calls the caller's objects are simply left as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec

from threadfold.core.convert import to_messages
from threadfold.core.errors import ReducerError
from threadfold.core.ids import IdSource, is_message_object, uuid4_str
from threadfold.core.messages import (
    REMOVE_ALL_MESSAGES,
    BaseMessage,
    RemoveMessage,
    message_chunk_to_message,
)
from threadfold.core.openai import to_openai

Reducer = Callable[[Any, Any], list[BaseMessage]]


def add_messages(
    left: Any = None, right: Any = None, *, format: str | None = None, new_id: IdSource = uuid4_str
) -> Any:
    """Merge ``right`` into ``left`` by id, LangGraph's way.

    With neither argument, returns the reducer configured with the keyword arguments
    (``add_messages(format="langchain-openai")``); with only one, raises as LangGraph does.
    """
    if left is None and right is None:
        return partial(add_messages, format=format, new_id=new_id)
    if left is None or right is None:
        side = "left" if left else "right"
        raise ReducerError(
            f"Must specify non-null arguments for both 'left' and 'right'. Only received: '{side}'."
        )
    return _merge(left, right, format, new_id)


class _Side:
    """One argument: the caller's items and the messages they became."""

    def __init__(self, side: Any, path: str) -> None:
        self.items: list[Any] = side if isinstance(side, list) else [side]
        converted = to_messages(self.items, path)
        self.messages = [message_chunk_to_message(m) for m in converted]
        # A chunk becomes a new message at each occurrence, as in LangGraph: the same
        # chunk object passed twice is two messages, with two ids.
        self.was_chunk = [m is not c for m, c in zip(self.messages, converted, strict=True)]


def _stamp(side: _Side, memo: dict[int, str], new_id: IdSource) -> None:
    """Give id-less messages an id; the same message object twice gets the same id.

    LangGraph stamps the object in place, so its second occurrence already has the id.
    ``memo`` is keyed by the caller's object (``id()``), which the caller's lists keep
    alive for the whole call.
    """
    messages = side.messages
    for i, m in enumerate(messages):
        if m.id is None:
            item = side.items[i]
            if not side.was_chunk[i] and is_message_object(item):
                given = memo.get(id(item))
                if given is None:
                    given = memo[id(item)] = new_id()
            else:
                given = new_id()
            messages[i] = msgspec.structs.replace(m, id=given)


def _merge(left: Any, right: Any, format: str | None, new_id: IdSource) -> list[BaseMessage]:
    lhs, rhs = _Side(left, "left"), _Side(right, "right")
    memo: dict[int, str] = {}
    _stamp(lhs, memo, new_id)
    _stamp(rhs, memo, new_id)
    remove_all = None
    for i, m in enumerate(rhs.messages):
        if type(m) is RemoveMessage and m.id == REMOVE_ALL_MESSAGES:
            remove_all = i
    if remove_all is not None:
        return rhs.messages[remove_all + 1 :]
    merged = _upsert(list(lhs.messages), rhs.messages)
    if format == "langchain-openai":
        return to_messages(to_openai(merged))
    if format:
        raise ReducerError(
            f"Unrecognized format={format!r}. Expected one of 'langchain-openai', None."
        )
    return merged


def _upsert(merged: list[BaseMessage], right: list[BaseMessage]) -> list[BaseMessage]:
    """Replace known ids in place, append new ones; removes apply at the end."""
    slot = {m.id: i for i, m in enumerate(merged)}
    doomed: set[str | None] = set()
    for m in right:
        at = slot.get(m.id)
        if at is not None:
            if type(m) is RemoveMessage:
                doomed.add(m.id)
            else:
                doomed.discard(m.id)
                merged[at] = m
        elif type(m) is RemoveMessage:
            raise ReducerError(
                f"Attempting to delete a message with an ID that doesn't exist ('{m.id}')"
            )
        else:
            slot[m.id] = len(merged)
            merged.append(m)
    if doomed:
        return [m for m in merged if m.id not in doomed]
    return merged
