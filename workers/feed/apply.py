"""The rule a follower applies: the state at an event's ``prev`` and the event give the
state at its ``version`` (exactly ``GET state`` at that version).

A snapshot is a whole state; a change is :func:`apply` (or :func:`apply_in_place`); a
deleted event empties the state and sets the version held to 0-0 whatever was held
before it (:func:`deleted`): the first change of the thread written again applies on
0-0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from typing import TypeVar

from threadfold.workers.storage.feed_record import ORIGIN

T = TypeVar("T")


def apply(
    state: Mapping[int, T],
    *,
    reset: bool,
    removed: Iterable[int],
    upserts: Iterable[tuple[int, T]],
) -> dict[int, T]:
    """``state`` (position -> message) after one event, as a new mapping.

    Generic over the message's form (a stored body, a LangChain dict, an OpenAI dict):
    positions carry the rule. The messages in position order are the thread's messages.
    """
    out: dict[int, T] = {} if reset else dict(state)
    apply_in_place(out, reset=False, removed=removed, upserts=upserts)
    return out


def apply_in_place(
    state: MutableMapping[int, T],
    *,
    reset: bool,
    removed: Iterable[int],
    upserts: Iterable[tuple[int, T]],
) -> None:
    """:func:`apply` on ``state`` itself: a follower of a long thread (a ``Transcript``,
    the live benchmark's subscribers) would otherwise copy every message each event."""
    if reset:
        state.clear()
    for position in removed:
        state.pop(position, None)
    for position, message in upserts:
        state[position] = message


def in_order(state: Mapping[int, T]) -> list[T]:
    """The messages of ``state`` in position order."""
    return [state[p] for p in sorted(state)]


def deleted(state: MutableMapping[int, T]) -> str:
    """``state`` emptied in place by a deleted event; the version it is then at (0-0)."""
    state.clear()
    return ORIGIN
