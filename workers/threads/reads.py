"""The rules of a state read, without I/O: when a wait for a version is over, what a
page found is served as (or refused), how a replayed thread is paged, why time travel
has no state to give. The thread service (:mod:`threadfold.workers.threads.service`) runs
them around its store calls, sync and asyncio alike.
"""

from __future__ import annotations

import time
from typing import Final, TypeVar

from threadfold.core.context import NeedMore, Span, Window, sized, window
from threadfold.core.errors import (
    Gone,
    InvalidInput,
    NotFound,
    PoisonEntry,
    RequestError,
    Unavailable,
    VersionNotReached,
    never_written,
)
from threadfold.core.render import render
from threadfold.core.results import Context, State
from threadfold.core.versions import parse_version, reached
from threadfold.workers.replay.prefix import LAST, NotReplayable, Reason
from threadfold.workers.storage.context import ContextRead
from threadfold.workers.storage.read_state import StateBodies, StatePage, cut
from threadfold.workers.threads.query import ContextQuery, Query

# Read-your-writes polls the version with a growing interval: a version usually moves
# within milliseconds, and a long wait should not poll Redis hundreds of times a second.
POLL_START: Final = 0.002
POLL_MAX: Final = 0.05


Found = TypeVar("Found", StatePage, StateBodies)


def checked(found: Found | None, thread_id: str, q: Query) -> Found:
    """The page ``found``, or the refusal of a read that found nothing (or not its
    anchor)."""
    if found is None:
        raise never_written(thread_id)
    if q.anchor and not found.anchor_found:
        field = q.anchor_field
        raise InvalidInput(f"{field}: no message with id {q.anchor!r} in this thread", field=field)
    return found


def served(found: StatePage, thread_id: str, q: Query) -> State:
    """The page ``found`` as served in the query's format (a message that format cannot
    carry is a marker in its place, named in ``unservable``)."""
    rendered = render(found.messages, q.format)
    return State(
        thread_id,
        found.version,
        found.total,
        found.has_more,
        q.format,
        rendered.messages,
        tuple(flaw.item() for flaw in rendered.unservable),
    )


# A context read asks for the pages whose counts pass the budget; when the trim's
# end_on dropped messages past them, it asks again for this many times more.
CONTEXT_GROWTH: Final = 4


def windowed(found: ContextRead | None, thread_id: str, q: ContextQuery) -> Window | int:
    """The window of the thread a context read found, or, when the pages it sent do not
    reach the window's far edge (:class:`NeedMore`), the token count to read next."""
    if found is None:
        raise never_written(thread_id)
    try:
        return window(found.span, q.trim)
    except NeedMore:
        return CONTEXT_GROWTH * max(q.trim.max_tokens, sum(s.tokens for s in found.span.items))


def replayed_window(
    whole: StatePage | None, thread_id: str, q: ContextQuery
) -> tuple[ContextRead, Window]:
    """The window of a replayed thread (time travel): all of it is in memory."""
    if whole is None:
        raise never_written(thread_id)
    found = ContextRead(whole.version, whole.total, Span(sized(whole.messages, q.trim.counter)))
    return found, window(found.span, q.trim)


def context_served(win: Window, found: ContextRead, thread_id: str, q: ContextQuery) -> Context:
    """The window as served in the query's format."""
    rendered = render([item.message for item in win.items], q.format)
    return Context(
        thread_id,
        found.version,
        found.total,
        q.format,
        rendered.messages,
        win.tokens,
        q.trim.max_tokens,
        q.trim.counter,
        win.adjusted,
        tuple(flaw.item() for flaw in rendered.unservable),
    )


def page_of(whole: StatePage, mode: str, anchor: str, limit: int) -> StatePage:
    """A page of an in-memory (replayed) thread, cut as READ_STATE cuts a live one."""
    at = -1
    if mode != "all":
        at = next((i for i, m in enumerate(whole.messages) if m.id == anchor), -1)
        if at < 0:
            return StatePage(whole.version, whole.total, False, False, [])
    messages, more = cut(whole.messages, at, mode, limit)
    return StatePage(whole.version, whole.total, more, True, messages)


class Waiting:
    """When to look at the version again, and when to give up."""

    def __init__(self, thread_id: str, wanted: str, wait: float) -> None:
        self.thread_id = thread_id
        self.wanted = wanted
        self.wait = wait
        self.deadline = time.monotonic() + wait
        self.interval = POLL_START

    def pause(self, version: str | None) -> float | None:
        """None once ``version`` reached the wanted one; else how long to sleep."""
        if version is None:
            raise never_written(self.thread_id)
        if reached(version, self.wanted):
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise VersionNotReached(
                f"thread {self.thread_id!r} is at version {version}; min_version "
                f"{self.wanted} was not reached within {self.wait:g} s",
                details={"version": version},
            )
        pause, self.interval = min(self.interval, left), min(self.interval * 2, POLL_MAX)
        return pause


# Time travel is the store's (threadfold.workers.replay.prefix reads a consistent prefix of
# the log); here only its refusals are worded, reason by reason.

_U64: Final = 2**64 - 1


def redis_id(version: str) -> str:
    """A checked version as an entry id Redis takes (each part within 64 bits; a
    version past every entry id is the end of the log)."""
    ms, seq = parse_version(version)
    if ms > _U64:
        return LAST
    return f"{ms}-{min(seq, _U64)}"


def travel_error(exc: NotReplayable, thread_id: str, version: str) -> RequestError:
    """Why time travel to ``version`` has no state to give, as the API words it."""
    name = f"thread {thread_id!r}"
    match exc.reason:
        case Reason.TRIMMED:
            return Gone(
                f"at_version: {name} cannot be replayed to {version}: retention trimmed its "
                f"log; the oldest version served is {exc.oldest_version} (its live version)",
                field="at_version",
                details={"oldest_version": exc.oldest_version},
            )
        case Reason.BEFORE_BIRTH:
            return NotFound(
                f"at_version: {name} had not been written at version {version} (its first "
                f"version is {exc.first_version}; a thread of this id deleted since is gone "
                "with its versions)",
                field="at_version",
                details={"first_version": exc.first_version},
            )
        case Reason.POISON:
            return PoisonEntry(
                f"at_version: log entry {exc.entry} of {name}, at or before version "
                f"{version}, cannot be decoded or folded; the thread is held before it "
                "until an operator skips it (threadfold retry --skip)",
                field="at_version",
                details={"entry": exc.entry},
            )
        case Reason.MOVING:
            return Unavailable(f"{name} kept changing while its log was read; retry")
        case _:  # never written, or deleted (while it was read, too)
            return never_written(thread_id)
