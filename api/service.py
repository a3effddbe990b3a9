"""What the endpoints do, independent of the web framework: ingest, read, wait, delete."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import redis

from threadfold.api.errors import (
    ApiError,
    BadRequest,
    Gone,
    Invalid,
    NotFound,
    PoisonEntry,
    Unavailable,
    VersionNotReached,
)
from threadfold.api.fragments import JsonFragments
from threadfold.api.query import Format, format_of, pairs, version
from threadfold.api.schemas import (
    Accepted,
    BulkIn,
    DeltaIn,
    SkippedOut,
    StateOut,
    StatusOut,
    ThreadOut,
    ThreadsOut,
    UnservableOut,
)
from threadfold.api.settings import ApiSettings
from threadfold.core.errors import InvalidMessage
from threadfold.core.keys import InvalidName, check_name
from threadfold.core.render import CODE, Unservable, render
from threadfold.workers.ingest.producer import AsyncProducer, Delta, Enqueued
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.read_state import StateBodies, StatePage
from threadfold.workers.threads.listing import recent_threads
from threadfold.workers.threads.prefix import NotReplayable
from threadfold.workers.threads.reads import (
    BeforeBirth,
    HistoryGone,
    NotReached,
    ReadError,
    ThreadNotFound,
    await_for,
    page_of,
    redis_id,
    travel_error,
)
from threadfold.workers.threads.reads import PoisonEntry as ReadPoison


@dataclass(frozen=True, slots=True)
class Page:
    """A validated state query."""

    format: Format = "langchain"
    min_version: str | None = None
    at_version: str | None = None
    wait: float = 0.0
    limit: int = -1
    before: str | None = None
    after: str | None = None


def _accepted(result: Enqueued) -> Accepted:
    return Accepted(
        result.thread_id, result.version, result.accepted, result.duplicate, list(result.ids)
    )


def thread_name(thread_id: str) -> str:
    try:
        return check_name(thread_id, "thread id")
    except InvalidName as exc:
        raise Invalid(str(exc), field="thread_id") from exc


class Service:
    """One per process; every method is one request's work."""

    def __init__(self, settings: ApiSettings, producer: AsyncProducer, store: AsyncStore) -> None:
        self.settings = settings
        self.producer = producer
        self.store = store
        cache = settings.json_cache_mb * 1024 * 1024
        self.fragments = JsonFragments(cache) if cache > 0 else None

    async def ingest(self, tenant: str, thread_id: str, body: DeltaIn) -> Accepted:
        self._check_size(body.messages, "messages")
        delta = Delta(thread_id, body.messages, body.delta_id, tenant)  # the producer checks the id
        [result] = await self._enqueue([delta], path="")
        return _accepted(result)

    async def ingest_bulk(self, tenant: str, body: BulkIn) -> list[Accepted]:
        if len(body.deltas) > self.settings.max_deltas_per_request:
            limit = self.settings.max_deltas_per_request
            raise Invalid(f"deltas: at most {limit} deltas per request", field="deltas")
        for i, item in enumerate(body.deltas):
            self._check_size(item.messages, f"deltas[{i}].messages")
        deltas = [Delta(d.thread_id, d.messages, d.delta_id, tenant) for d in body.deltas]
        return [_accepted(r) for r in await self._enqueue(deltas, path="deltas")]

    def _check_size(self, messages: Sequence[Any], field: str) -> None:
        limit = self.settings.max_messages_per_delta
        if len(messages) > limit:
            raise Invalid(f"{field}: at most {limit} messages per delta", field=field)

    async def _enqueue(self, deltas: list[Delta], path: str) -> list[Enqueued]:
        try:
            return await self.producer.enqueue_many(deltas, path=path)
        except InvalidMessage as exc:
            raise Invalid(str(exc), field=exc.path or None) from exc
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise Unavailable("thread state is unreachable; retry with the same delta_id") from exc

    async def state(self, tenant: str, thread_id: str, page: Page) -> StateOut:
        ref = f"{tenant}/{thread_name(thread_id)}"
        if page.min_version is not None:
            await self._wait_for(ref, thread_id, page.min_version, page.wait)
        mode, anchor = ("after", page.after) if page.after else ("before", page.before or "")
        mode = mode if anchor else "all"
        if page.at_version is None and page.format == "langchain" and self.fragments is not None:
            return await self._state_from_cache(ref, thread_id, page, mode, anchor)
        found: StatePage | None
        if page.at_version is not None:
            found = await self._replayed(ref, thread_id, page.at_version, mode, anchor, page.limit)
        else:
            found = await self.store.read_state(ref, mode, anchor, page.limit)
        found = _check_found(found, thread_id, page, anchor)
        rendered = render(found.messages, page.format)  # a message that fails is a marker
        return StateOut(
            thread_id,
            found.version,
            found.total,
            found.has_more,
            page.format,
            rendered.messages,
            _unservable(rendered.unservable),
        )

    async def _state_from_cache(
        self, ref: str, thread_id: str, page: Page, mode: str, anchor: str
    ) -> StateOut:
        """The common read (live state, LangChain form) with the bodies' JSON memoized."""
        assert self.fragments is not None  # the caller checked
        found = _check_found(
            await self.store.read_state_bodies(ref, mode, anchor, page.limit),
            thread_id,
            page,
            anchor,
        )
        messages, unservable = self.fragments.of(found.ids, found.bodies)
        return StateOut(
            thread_id,
            found.version,
            found.total,
            found.has_more,
            page.format,
            messages,
            _unservable(unservable),
        )

    async def _replayed(  # noqa: PLR0917  # the query's parts, as state() has them
        self, ref: str, thread_id: str, version: str, mode: str, anchor: str, limit: int
    ) -> StatePage:
        """Time travel: the state at ``version`` (:meth:`AsyncStore.travel`), then paged
        like a live read; or the 404 / 409 / 410 / 503 that says why there is none."""
        try:
            whole = await self.store.travel(
                ref, redis_id(version), merge_chunks=self.settings.merge_chunks
            )
        except NotReplayable as exc:
            raise api_error(travel_error(exc, thread_id, version)) from exc
        return page_of(whole, mode, anchor, limit)

    async def _wait_for(self, ref: str, thread_id: str, wanted: str, wait: float) -> None:
        """Read-your-writes: the direct clients' wait (:func:`await_for`), its refusals
        as the API answers them."""
        try:
            await await_for(self.store, ref, thread_id, wanted, wait)
        except ReadError as exc:
            raise api_error(exc) from exc

    async def status(self, tenant: str, thread_id: str) -> StatusOut:
        found = await self.store.status(f"{tenant}/{thread_name(thread_id)}")
        if found is None:
            raise NotFound(f"thread {thread_id!r} has never been written", field="thread_id")
        return StatusOut(
            thread_id,
            found.version,
            found.last_enqueued,
            found.backlog,
            found.messages,
            found.last_commit_ms,
            found.attempts,
            bool(found.quarantined),
            found.quarantined or None,
            found.quarantined_entry or None,
            found.dirty_since_ms,
            [SkippedOut(s.entry, s.reason, s.at_ms) for s in found.skipped],
        )

    async def threads(self, tenant: str, limit: int) -> ThreadsOut:
        """The tenant's ``limit`` most recently active threads
        (:mod:`threadfold.workers.threads.listing`)."""
        found = await recent_threads(self.store.client, self.store.keyspace, tenant, limit)
        return ThreadsOut(
            [
                ThreadOut(
                    ref.partition("/")[2],
                    row.version,
                    row.messages,
                    row.backlog,
                    row.lag_ms,
                    bool(row.quarantined),
                    row.quarantined or None,
                    row.last_commit_ms,
                    activity,
                    row.last_enqueued,
                )
                for ref, row, activity in found
            ]
        )

    async def delete(self, tenant: str, thread_id: str) -> None:
        if not await self.store.delete(f"{tenant}/{thread_name(thread_id)}"):
            raise NotFound(f"thread {thread_id!r} has never been written", field="thread_id")


def _unservable(flaws: Sequence[Unservable]) -> list[UnservableOut]:
    return [UnservableOut(CODE, f.message, f.field, f.pointer, f.index, f.id) for f in flaws]


Found = TypeVar("Found", StatePage, StateBodies)


def _check_found(found: Found | None, thread_id: str, page: Page, anchor: str) -> Found:
    """``found``, or the 404 / 400 a read that found nothing (or not its anchor) answers."""
    if found is None:
        raise NotFound(f"thread {thread_id!r} has never been written", field="thread_id")
    if anchor and not found.anchor_found:
        field = "after" if page.after else "before"
        raise Invalid(f"{field}: no message with id {anchor!r} in this thread", field=field)
    return found


_QUERY: Final = frozenset(
    {"format", "min_version", "at_version", "wait", "limit", "before", "after"}
)
# Numbers in ASCII digits only: int() and float() also take ' 3', '3_0', '+3', 'nan',
# 'infinity' and other scripts' digits ('٣' is 3). A leading '-' is let through to the
# range check, whose message says more.
_INTEGER: Final = re.compile(r"-?[0-9]{1,20}")
_NUMBER: Final = re.compile(r"-?(?:[0-9]{1,20}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")


def parse_page(items: Iterable[tuple[str, str]], settings: ApiSettings) -> Page:
    """The query string of ``GET /threads/{id}/state`` (its name-value pairs, in order),
    validated field by field: unknown or repeated names are refused, not guessed at."""
    query = pairs(items, _QUERY)
    fmt = format_of(query.get("format"))
    min_version = version(query.get("min_version"), "min_version")
    at_version = version(query.get("at_version"), "at_version")
    wait = _number(query, "wait", 0.0, settings.max_wait_seconds)
    limit = int(_number(query, "limit", -1, settings.max_page, integer=True))
    before, after = _anchor(query, "before"), _anchor(query, "after")
    if before is not None and after is not None:
        raise BadRequest("before: give either before or after, not both", field="before")
    return Page(fmt, min_version, at_version, wait, limit, before, after)


#: ``GET /threads?limit=``: its default and its largest.
THREADS_LIMIT: Final = 50
THREADS_MAX: Final = 500


def parse_threads_limit(items: Iterable[tuple[str, str]]) -> int:
    """The query string of ``GET /threads``: ``limit`` alone, refused as ``parse_page``
    refuses (unknown or repeated names, non-digits, out of range)."""
    query = pairs(items, ("limit",))
    return int(_number(query, "limit", THREADS_LIMIT, THREADS_MAX, integer=True))


def _anchor(query: dict[str, str], name: str) -> str | None:
    """A message id: any non-empty string (ids are the callers' own, or UUIDs)."""
    value = query.get(name)
    if value == "":
        raise BadRequest(f"{name}: expected a message id, got an empty string", field=name)
    return value


def api_error(exc: ReadError) -> ApiError:
    """A refused read (:mod:`threadfold.workers.threads.reads`, worded there once for the API
    and the direct clients) as the API's error: the same message, field and details."""
    match exc:
        case BeforeBirth():
            return NotFound(exc.message, field=exc.field, first_version=exc.first_version)
        case ThreadNotFound():
            return NotFound(exc.message, field=exc.field)
        case NotReached():
            return VersionNotReached(exc.message, version=exc.version)
        case HistoryGone():
            return Gone(exc.message, field=exc.field, oldest_version=exc.oldest_version)
        case ReadPoison():
            return PoisonEntry(exc.message, field=exc.field, entry=exc.entry)
        case _:  # Moving: every read met a racing trim or delete; a retry may not
            return Unavailable(exc.message)


def _number(
    query: dict[str, str], name: str, default: float, top: float, *, integer: bool = False
) -> float:
    raw = query.get(name)
    if raw is None:
        return default
    if (_INTEGER if integer else _NUMBER).fullmatch(raw) is None:
        kind = "an integer" if integer else "a number"
        raise BadRequest(f"{name}: expected {kind} in ASCII digits, got {raw!r}", field=name)
    value = int(raw) if integer else float(raw)
    if not 0 <= value <= top:
        raise BadRequest(f"{name}: expected a value from 0 to {top:g}, got {raw}", field=name)
    return value
