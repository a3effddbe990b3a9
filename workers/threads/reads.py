"""Reading a thread as the HTTP API serves it: a checked query, then a page of the live
state (or of a replay), in LangChain's or OpenAI's form, after waiting for a version.

One place for these rules so that the direct clients (``threadfold.Client`` and
``AsyncClient``) answer a read exactly as ``GET /threads/{id}/state`` does: the same
pages, the same refusals, each naming the argument at fault. The errors here carry no
HTTP status; each caller maps them to its own (the API to its JSON errors, the clients
to their exceptions).
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Any, Final, Literal

from threadfold.core.errors import ThreadfoldError
from threadfold.core.render import Unservable, render
from threadfold.core.versions import InvalidVersion, parse_version, reached
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.meta import VERSION_FIELDS, version_of
from threadfold.workers.storage.read_state import StatePage, cut
from threadfold.workers.storage.store import Store
from threadfold.workers.threads.prefix import LAST, NotReplayable, Reason
from threadfold.workers.threads.replay import travel

Format = Literal["langchain", "openai"]
FORMATS: Final = ("langchain", "openai")

# Read-your-writes polls the version with a growing interval: a version usually moves
# within milliseconds, and a long wait should not poll Redis hundreds of times a second.
POLL_START: Final = 0.002
POLL_MAX: Final = 0.05


class ReadError(ThreadfoldError):
    """A read that cannot be answered; ``field`` names the argument at fault."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class BadQuery(ReadError, ValueError):
    """An argument of the query is malformed (the API answers 400)."""


class UnknownAnchor(ReadError, ValueError):
    """``after`` / ``before`` names no message of the thread (the API answers 422)."""


class ThreadNotFound(ReadError, LookupError):
    """The thread was never written, or was deleted (the API answers 404)."""


class NotReached(ReadError, TimeoutError):
    """``min_version`` was not reached within the wait; ``version`` is where it stands
    (the API answers 409)."""

    def __init__(self, message: str, *, version: str) -> None:
        super().__init__(message)
        self.version = version


class HistoryGone(ReadError, LookupError):
    """Time travel needs log entries that retention has dropped (the API answers 410);
    ``oldest_version`` is the oldest version still served."""

    def __init__(self, message: str, *, field: str | None, oldest_version: str | None) -> None:
        super().__init__(message, field=field)
        self.oldest_version = oldest_version


class BeforeBirth(ThreadNotFound):
    """Time travel to a version before the thread's current incarnation began (the API
    answers 404); ``first_version`` is where it begins."""

    def __init__(self, message: str, *, field: str | None, first_version: str | None) -> None:
        super().__init__(message, field=field)
        self.first_version = first_version


class PoisonEntry(ReadError):
    """Time travel reaches a log entry that cannot be decoded or folded (the API answers
    409); ``entry`` names it."""

    def __init__(self, message: str, *, field: str | None, entry: str | None) -> None:
        super().__init__(message, field=field)
        self.entry = entry


class Moving(ReadError):
    """Every read of the log met a concurrent trim or delete (the API answers 503)."""


@dataclass(frozen=True, slots=True)
class Query:
    """A checked state query; ``limit`` -1 is "all", ``wait`` is in seconds."""

    format: Format = "langchain"
    min_version: str | None = None
    at_version: str | None = None
    wait: float = 0.0
    limit: int = -1
    before: str | None = None
    after: str | None = None

    @property
    def mode(self) -> str:
        """How the page is cut: 'after' or 'before' an anchor message, or 'all'."""
        if self.after:
            return "after"
        return "before" if self.before else "all"

    @property
    def anchor(self) -> str:
        return self.after or self.before or ""

    @property
    def anchor_field(self) -> str:
        return "after" if self.after else "before"


def query(  # noqa: PLR0913  # a state read's query parameters, by name, as the API takes them
    *,
    format: str = "langchain",
    min_version: str | None = None,
    at_version: str | None = None,
    wait: float | None = None,
    limit: int | None = None,
    before: str | None = None,
    after: str | None = None,
    max_wait: float = math.inf,
    max_page: int | None = None,
) -> Query:
    """The arguments of a state read, checked one by one as the API checks its query
    string (``max_wait`` and ``max_page`` are the API's limits; a direct reader has none)."""
    fmt: Format
    if format == "langchain":
        fmt = "langchain"
    elif format == "openai":
        fmt = "openai"
    else:
        raise BadQuery("format: expected 'langchain' or 'openai'", field="format")
    for name, version in (("min_version", min_version), ("at_version", at_version)):
        if version is not None:
            try:
                parse_version(version)
            except InvalidVersion as exc:
                raise BadQuery(f"{name}: {exc}", field=name) from exc
    seconds = 0.0 if wait is None else _wait(wait, max_wait)
    count = -1 if limit is None else _limit(limit, max_page)
    for name, anchor in (("before", before), ("after", after)):
        if anchor is not None and not (isinstance(anchor, str) and anchor):
            got = "an empty string" if anchor == "" else repr(anchor)
            raise BadQuery(f"{name}: expected a message id, got {got}", field=name)
    if before is not None and after is not None:
        raise BadQuery("before: give either before or after, not both", field="before")
    return Query(fmt, min_version, at_version, seconds, count, before, after)


def _wait(wait: object, top: float) -> float:
    if (
        isinstance(wait, bool)
        or not isinstance(wait, int | float)
        or not 0 <= wait <= top
        or not math.isfinite(wait)
    ):
        span = ">= 0" if top == math.inf else f"from 0 to {top:g}"
        raise BadQuery(f"wait: expected a number of seconds {span}, got {wait!r}", field="wait")
    return float(wait)


def _limit(limit: object, top: int | None) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise BadQuery(f"limit: expected an integer >= 0, got {limit!r}", field="limit")
    if top is not None and limit > top:
        raise BadQuery(f"limit: expected a value from 0 to {top}, got {limit}", field="limit")
    return limit


@dataclass(frozen=True, slots=True)
class Answer:
    """A page of a thread as served: the messages as plain dicts in the query's format,
    and the markers served in place of messages that format cannot carry."""

    version: str
    total: int
    has_more: bool
    format: Format
    messages: list[dict[str, Any]]
    unservable: tuple[Unservable, ...] = ()


def not_found(thread_id: str) -> ThreadNotFound:
    return ThreadNotFound(f"thread {thread_id!r} has never been written", field="thread_id")


def answer(found: StatePage | None, thread_id: str, q: Query) -> Answer:
    """The page ``found`` as served, or the refusal of a read that found nothing (or not
    its anchor)."""
    if found is None:
        raise not_found(thread_id)
    if q.anchor and not found.anchor_found:
        field = q.anchor_field
        raise UnknownAnchor(f"{field}: no message with id {q.anchor!r} in this thread", field=field)
    rendered = render(found.messages, q.format)  # a message that fails is a marker
    return Answer(
        found.version,
        found.total,
        found.has_more,
        q.format,
        rendered.messages,
        tuple(rendered.unservable),
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


class _Waiting:
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
            raise not_found(self.thread_id)
        if reached(version, self.wanted):
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise NotReached(
                f"thread {self.thread_id!r} is at version {version}; min_version "
                f"{self.wanted} was not reached within {self.wait:g} s",
                version=version,
            )
        pause, self.interval = min(self.interval, left), min(self.interval * 2, POLL_MAX)
        return pause


# Time travel is the store's (threadfold.workers.threads.prefix reads a consistent prefix of the
# log);
# here only its refusals become the API's, reason by reason.

_U64: Final = 2**64 - 1


def redis_id(version: str) -> str:
    """A checked version as an entry id Redis takes (each part within 64 bits; a
    version past every entry id is the end of the log)."""
    ms, seq = parse_version(version)
    if ms > _U64:
        return LAST
    return f"{ms}-{min(seq, _U64)}"


def travel_error(exc: NotReplayable, thread_id: str, version: str) -> ReadError:
    """Why time travel to ``version`` has no state to give, as the API words it."""
    name = f"thread {thread_id!r}"
    match exc.reason:
        case Reason.TRIMMED:
            return HistoryGone(
                f"at_version: {name} cannot be replayed to {version}: retention trimmed its "
                f"log; the oldest version served is {exc.oldest_version} (its live version)",
                field="at_version",
                oldest_version=exc.oldest_version,
            )
        case Reason.BEFORE_BIRTH:
            return BeforeBirth(
                f"at_version: {name} had not been written at version {version} (its first "
                f"version is {exc.first_version}; a thread of this id deleted since is gone "
                "with its versions)",
                field="at_version",
                first_version=exc.first_version,
            )
        case Reason.POISON:
            return PoisonEntry(
                f"at_version: log entry {exc.entry} of {name}, at or before version "
                f"{version}, cannot be decoded or folded; the thread is held before it "
                "until an operator skips it (threadfold retry --skip)",
                field="at_version",
                entry=exc.entry,
            )
        case Reason.MOVING:
            return Moving(f"{name} kept changing while its log was read; retry")
        case _:  # never written, or deleted (while it was read, too)
            return not_found(thread_id)


# -- synchronous ---------------------------------------------------------------------------


def version(store: Store, ref: str) -> str | None:
    """The thread's version (cursor), or None when it was never written."""
    return version_of(store.client.hmget(store.keyspace.thread(ref).meta, [*VERSION_FIELDS]))


def wait_for(store: Store, ref: str, thread_id: str, wanted: str, wait: float) -> str:
    """Read-your-writes: the thread's version once it reached ``wanted``, within ``wait``."""
    waiting = _Waiting(thread_id, wanted, wait)
    while True:
        now = version(store, ref)
        pause = waiting.pause(now)
        if pause is None:
            assert now is not None  # pause() refused a missing thread
            return now
        time.sleep(pause)


def read(store: Store, ref: str, thread_id: str, q: Query, *, merge_chunks: bool) -> Answer:
    """The state read ``q`` of one thread, as the API answers it."""
    if q.min_version is not None:
        wait_for(store, ref, thread_id, q.min_version, q.wait)
    if q.at_version is None:
        return answer(store.read_state(ref, q.mode, q.anchor, q.limit), thread_id, q)
    try:
        whole = travel(store, ref, redis_id(q.at_version), merge_chunks=merge_chunks)
    except NotReplayable as exc:
        raise travel_error(exc, thread_id, q.at_version) from exc
    return answer(page_of(whole, q.mode, q.anchor, q.limit), thread_id, q)


# -- asyncio -------------------------------------------------------------------------------


async def aversion(store: AsyncStore, ref: str) -> str | None:
    return version_of(
        await store.client.hmget(store.keyspace.thread(ref).meta, [*VERSION_FIELDS])
    )


async def await_for(
    store: AsyncStore,
    ref: str,
    thread_id: str,
    wanted: str,
    wait: float,
) -> str:
    """:func:`wait_for` for asyncio callers."""
    waiting = _Waiting(thread_id, wanted, wait)
    while True:
        now = await aversion(store, ref)
        pause = waiting.pause(now)
        if pause is None:
            assert now is not None  # pause() refused a missing thread
            return now
        await asyncio.sleep(pause)


async def aread(
    store: AsyncStore, ref: str, thread_id: str, q: Query, *, merge_chunks: bool
) -> Answer:
    """:func:`read` for asyncio callers."""
    if q.min_version is not None:
        await await_for(store, ref, thread_id, q.min_version, q.wait)
    if q.at_version is None:
        return answer(await store.read_state(ref, q.mode, q.anchor, q.limit), thread_id, q)
    try:
        whole = await store.travel(ref, redis_id(q.at_version), merge_chunks=merge_chunks)
    except NotReplayable as exc:
        raise travel_error(exc, thread_id, q.at_version) from exc
    return answer(page_of(whole, q.mode, q.anchor, q.limit), thread_id, q)
