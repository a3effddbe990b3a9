"""What ``subscribe()`` yields, and :class:`Transcript`, which keeps a thread's messages
up to date from it: a snapshot, then one change per version, each applying on the one
before, and a deleted event when the thread is removed (the empty thread at 0-0, on
which its next change applies). The event types are the feed's
(:mod:`threadfold.workers.feed.events`), named here for the clients' users; docs/feed.md.
"""

from __future__ import annotations

from typing import Any

from threadfold.workers.feed.apply import apply_in_place, deleted, in_order
from threadfold.workers.feed.events import Change, Deleted, Event, Removed, Snapshot, Upsert

__all__ = ["Change", "Deleted", "Event", "Removed", "Snapshot", "Transcript", "Upsert"]


class Transcript:
    """A thread's messages kept current from a subscription's events.

    >>> transcript = Transcript()
    >>> for event in client.subscribe("t1"):  # doctest: +SKIP
    ...     transcript.apply(event)
    ...     print(transcript.version, len(transcript.messages))
    """

    def __init__(self) -> None:
        self.version: str | None = None
        self._by_position: dict[int, list[dict[str, Any]]] = {}

    def apply(self, event: Event) -> None:
        """Take ``event``: a snapshot replaces everything; a deleted event empties it (at
        version 0-0); a change must apply on this transcript's version (the clients only
        send those), else ValueError."""
        if isinstance(event, Snapshot):
            self._by_position = {}
            for position, message in zip(event.positions, event.messages, strict=True):
                self._by_position.setdefault(position, []).append(message)
        elif isinstance(event, Deleted):
            self.version = deleted(self._by_position)
            return
        else:
            if event.prev != self.version:
                raise ValueError(
                    f"change to {event.version} applies on {event.prev}, not {self.version}"
                )
            apply_in_place(  # the feed's one rule (each position: what it serves)
                self._by_position,
                reset=event.reset,
                removed=(gone.position for gone in event.removed),
                upserts=((upsert.position, upsert.served) for upsert in event.upserts),
            )
        self.version = event.version

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The thread's messages at :attr:`version`, in order (as ``state()`` reads them)."""
        return [m for served in in_order(self._by_position) for m in served]

    @property
    def ids(self) -> list[str | None]:
        """Each message's id, as its form shows it (the OpenAI form has none)."""
        return [_id_of(m) for m in self.messages]


def _id_of(message: dict[str, Any]) -> str | None:
    found = message.get("id")
    return found if isinstance(found, str) else None
