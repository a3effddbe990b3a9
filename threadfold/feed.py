"""What ``subscribe()`` yields, and :class:`Transcript`, which keeps a thread's messages
up to date from it: a snapshot, then one change per version, each applying on the one
before, and a deleted event when the thread is removed (the empty thread at 0-0, on
which its next change applies). The event types are the feed's
(:mod:`threadfold.workers.feed.events`), named here for the clients' users; docs/feed.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from threadfold.core.context import COUNT, Counter, Sized, Span, Strategy, window
from threadfold.core.convert import to_messages
from threadfold.core.results import Context
from threadfold.workers.feed.apply import apply_in_place, deleted, in_order
from threadfold.workers.feed.events import Change, Deleted, Event, Removed, Snapshot, Upsert
from threadfold.workers.threads import query

__all__ = ["Change", "Deleted", "Event", "Removed", "Snapshot", "Transcript", "Upsert"]


class Transcript:
    """A thread's messages kept current from a subscription's events.

    >>> transcript = Transcript()
    >>> for event in client.subscribe("t1"):  # doctest: +SKIP
    ...     transcript.apply(event)
    ...     print(transcript.version, len(transcript.messages))
    """

    def __init__(self, thread_id: str = "") -> None:
        self.thread_id = thread_id
        self.version: str | None = None
        self._by_position: dict[int, list[dict[str, Any]]] = {}
        # Each position's message as loaded and counted for context(), kept while the
        # served dict it came from is the one the position holds.
        self._counted: dict[tuple[int, int], tuple[dict[str, Any], Sized]] = {}

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


    def context(  # GET /context's trim arguments, by name
        self,
        max_tokens: int,
        *,
        strategy: Strategy = "last",
        include_system: bool = False,
        start_on: str | Sequence[str] | None = None,
        end_on: str | Sequence[str] | None = None,
        counter: Counter = "approximate",
    ) -> Context:
        """The context window of the messages held (at :attr:`version`), as
        ``context()`` on a client answers it at that version: the window follows the
        thread as the transcript does, with no read. Exact for a subscription in
        LangChain's form (the default); each message is loaded and counted once."""
        asked = query.context(
            max_tokens=max_tokens,
            strategy=strategy,
            include_system=include_system,
            start_on=start_on if start_on is None or isinstance(start_on, str) else [*start_on],
            end_on=end_on if end_on is None or isinstance(end_on, str) else [*end_on],
            counter=counter,
        )
        self._counted = counted = self._recounted(asked.trim.counter)
        items = [item for _, item in counted.values()]
        win = window(Span(items), asked.trim)
        chosen = {id(item) for item in win.items}
        kept = [served for served, item in counted.values() if id(item) in chosen]
        return Context(
            self.thread_id,
            self.version or "0-0",
            len(items),
            "langchain",
            kept,
            win.tokens,
            max_tokens,
            asked.trim.counter,
            win.adjusted,
        )


    def _recounted(self, counter: Counter) -> dict[tuple[int, int], tuple[dict[str, Any], Sized]]:
        """Each served message held, in order, loaded and counted (once: a dict the
        position still holds keeps its count)."""
        counted: dict[tuple[int, int], tuple[dict[str, Any], Sized]] = {}
        count = COUNT[counter]
        for position in sorted(self._by_position):
            for part, served in enumerate(self._by_position[position]):
                known = self._counted.get((position, part))
                if known is None or known[0] is not served:
                    [message] = to_messages([served])
                    known = (served, Sized(message, count(message), position))
                counted[position, part] = known
        return counted


def _id_of(message: dict[str, Any]) -> str | None:
    found = message.get("id")
    return found if isinstance(found, str) else None
