"""The producer client: validate and stamp ids (:mod:`threadfold.workers.ingest.prepare`), append
to the thread's log, wake a worker.

Usable from any Python backend, with or without the HTTP API. One script call appends
the deltas of many threads (all of a bulk's on one server, a bucket's on a cluster):
for each thread it drops a retried ``delta_id`` (answering its original version) and
sets the wake-up flag only if absent; only the caller that set the flag sends the
Celery task, so one task drains many deltas and batches grow with the backlog. A
thread's delta with nothing waiting before it is committed by the call itself
(``THREADFOLD_INGEST_COMMITS``): no wake-up at all. Not a stream's bulks: a stream
keeps Redis busy by design, so its threads' deltas pile up for a worker, whose commit
of many costs less a delta than a commit a bulk (measured, docs/benchmarks.md, issue
24: 1.28x the deltas/s for bulks of 500 one-delta threads), and no one waits to see
them. The calls and their answers are :mod:`threadfold.workers.ingest.calls`'.

Everything is validated before anything is appended: a bad delta in a bulk call fails
the whole call, naming the item, and nothing is written. A call's admission (the
tenant's share of writes, ``admit``) is made after that and before any write, so a
refused call costs the tenant nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis

from threadfold.core.errors import InvalidMessage, NotReplicated, RequestError
from threadfold.core.ids import MAX_DELTA_ID, IdSource, uuid4_str
from threadfold.core.keys import DEFAULT_TENANT
from threadfold.core.results import Appended, Delta
from threadfold.workers.ingest import calls as bulk
from threadfold.workers.ingest.prepare import Prepared, prepare, prepare_all
from threadfold.workers.ingest.wakeup import AsyncWaker, Waker
from threadfold.workers.metrics import Metrics
from threadfold.workers.redisio.client import AsyncRedis, Call, SyncRedis, arun_many, run_many
from threadfold.workers.redisio.durable import Waited, arun_waited, run_waited
from threadfold.workers.redisio.inflight import Stream
from threadfold.workers.settings import Settings

# Delta, prepare and MAX_DELTA_ID are named from here by the clients, the API and the
# tests since before they had a module of their own (threadfold.workers.ingest.prepare).
__all__ = ["MAX_DELTA_ID", "AsyncProducer", "Delta", "Producer", "prepare"]

log = logging.getLogger("threadfold.producer")

#: A call's admission (a tenant's share of writes: threadfold.workers.threads.admission),
#: made once the call is validated and before anything is written; it raises to refuse.
Admit = Callable[[], None]


@dataclass(slots=True)
class _Staged:
    """A bulk validated and encoded, with the script calls that append it."""

    deltas: Sequence[Delta]
    prepared: list[Prepared]
    groups: dict[str, list[int]]
    calls: list[Call]
    shares: list[list[str]]


def _lost_wake_up(refs: Sequence[str]) -> None:
    """A wake-up that could not be published: the deltas are already in the log and
    their threads marked dirty, so the sweeper wakes them once the flag's lease lapses.
    Failing the call here would make the caller retry a delta that is stored."""
    log.warning(
        "could not publish the wake-up of %d thread(s); the sweeper will", len(refs), exc_info=True
    )


class Producer:
    """Synchronous producer."""

    def __init__(
        self,
        client: SyncRedis,
        settings: Settings,
        waker: Waker,
        new_id: IdSource = uuid4_str,
        metrics: Metrics | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.waker = waker
        self.new_id = new_id
        #: Where the commits its calls make themselves are counted (a process that
        #: flushes counters to the fleet's totals: the API's), if anywhere.
        self.metrics = metrics
        #: The replicas a write waits for before it is answered (durability 'replica').
        self.wait = settings.replica_wait

    def enqueue(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        tenant: str = DEFAULT_TENANT,
    ) -> Appended:
        """Append one delta; returns its version (a Redis stream id ``<ms>-<seq>``)."""
        delta = Delta(thread_id, messages, delta_id)
        return self.enqueue_many([delta], path="delta", tenant=tenant)[0]

    def enqueue_many(
        self,
        deltas: Sequence[Delta],
        path: str = "deltas",
        *,
        tenant: str = DEFAULT_TENANT,
        admit: Admit | None = None,
    ) -> list[Appended]:
        """Append many deltas for many threads of ``tenant`` in one round trip; all
        validated first, then ``admit`` called (it may refuse the call), then anything
        written."""
        commits = self.settings.ingest_commits
        staged = self._stage(deltas, path, commits=commits, tenant=tenant, admit=admit)
        return self._finish(staged, *self._run(staged.calls))

    def _run(self, calls: Sequence[Call]) -> Waited:
        if self.wait is None:
            return run_many(self.client, calls), None
        assert isinstance(self.client, redis.Redis)  # the settings refuse a cluster
        return run_waited(self.client, calls, self.wait)

    def enqueue_stream(
        self, bulks: Iterable[Sequence[Delta]], path: str = "deltas", *,
        tenant: str = DEFAULT_TENANT, admit: Callable[[int], None] | None = None,
    ) -> Generator[list[Appended], None, None]:
        """Append bulk after bulk, each as :meth:`enqueue_many` would, with one in flight
        (bulk k+1 validated and encoded while Redis appends bulk k), yielding each bulk's
        results in order. For batch jobs, in one thread: one connection, so each thread's
        deltas stay in order; they are the workers' to fold (the module's head says why).

        Bulk k+1 is sent before bulk k is answered only when the two share no thread, so
        a bulk Redis refuses never has a later bulk's deltas overtake its own. A bad bulk
        (or one ``admit``, given its size, refuses) is refused whole when reached, as
        ``bulks[k]...``, after the bulks before it were appended and yielded. When Redis
        refuses bulk k or the connection is lost, the bulk sent after it may have been
        appended (its wake-ups are sent) and is in doubt, as are a lost connection's:
        give deltas a ``delta_id`` to make a retry safe. Leaving the loop early still
        reads the bulk in flight and sends its wake-ups.
        """
        stream = Stream(self.client, self.wait)
        waiting: deque[_Staged] = deque()
        try:
            for k, deltas in enumerate(bulks):
                try:
                    taken = None if admit is None else functools.partial(admit, len(deltas))
                    staged = self._stage(deltas, path, commits=False, tenant=tenant, admit=taken)
                except (InvalidMessage, RequestError) as exc:
                    yield from self._answer_all(stream, waiting)  # what was sent before
                    raise _located(exc, k) from None
                if waiting and not waiting[-1].groups.keys().isdisjoint(staged.groups):
                    yield self._answer(stream, waiting)  # a thread in both: bulk k first
                stream.send(staged.calls)
                waiting.append(staged)
                if len(waiting) > 1:
                    yield self._answer(stream, waiting)
            yield from self._answer_all(stream, waiting)
        finally:
            self._close(stream, waiting)

    def _answer_all(
        self, stream: Stream, waiting: deque[_Staged]
    ) -> Generator[list[Appended], None, None]:
        while waiting:
            yield self._answer(stream, waiting)

    def create(
        self,
        delta: Delta,
        metadata: Sequence[str | bytes],
        *,
        tenant: str = DEFAULT_TENANT,
        admit: Admit | None = None,
        identity: str = "",
        expect: str | None = None,
    ) -> Appended | None:
        """Append ``delta`` as a new thread's first, born with ``metadata`` (key, value
        JSON pairs); None, and nothing written, when the thread exists, unless the copy
        of the same ``identity`` made it (then the version it made). With ``expect``:
        appended only if the thread's last append made that version ('': only if it
        does not exist), else None. ``admit`` as :meth:`enqueue_many`'s."""
        [p] = prepare_all(
            [delta], "", self.new_id, self.settings.max_json_depth,
            commits=self.settings.ingest_commits, tenant=tenant,
        )
        if admit is not None:
            admit()
        call = bulk.create_call(self.settings, p, metadata, identity, expect)
        [raw], short = self._run([call])
        created, woken = bulk.created(delta, p, raw)
        if woken:
            try:
                self.waker.wake(woken)
            except Exception:  # noqa: BLE001  # the delta is stored: see _lost_wake_up
                _lost_wake_up(woken)
        if short is not None:
            raise short
        return created

    def _close(self, stream: Stream, waiting: deque[_Staged]) -> None:
        """The stream's end, however it came: a caller that left the loop early or an
        error still has bulks in flight, which are stored, so they are read and their
        threads woken before the connection is closed."""
        try:
            while waiting and stream.in_flight:
                with contextlib.suppress(NotReplicated):  # woken; the first one is raised
                    self._answer(stream, waiting)
        finally:
            stream.close()

    def _answer(self, stream: Stream, waiting: deque[_Staged]) -> list[Appended]:
        """The oldest bulk in flight, answered and its wake-ups sent. When it fails, the
        bulk sent after it is read and its wake-ups sent before the error is raised."""
        staged = waiting.popleft()
        try:
            answers, short = stream.receive()
        except Exception as exc:
            while waiting and stream.in_flight:
                try:
                    later = self._finish(waiting.popleft(), stream.receive()[0])
                except Exception:  # noqa: BLE001  # in doubt, as the first one is
                    break
                exc.add_note(f"the bulk sent after it was appended ({len(later)} deltas)")
            waiting.clear()
            raise
        return self._finish(staged, answers, short)

    def _stage(
        self,
        deltas: Sequence[Delta],
        path: str,
        *,
        commits: bool,
        tenant: str,
        admit: Admit | None = None,
    ) -> _Staged:
        """A bulk checked and encoded, with its calls, then admitted; ``commits``:
        whether its deltas may be committed by the ingest call."""
        prepared = prepare_all(
            deltas, path, self.new_id, self.settings.max_json_depth, commits=commits,
            tenant=tenant,
        )
        if admit is not None:
            admit()
        groups = bulk.group(prepared)
        calls, shares = bulk.calls(self.settings, prepared, groups)
        return _Staged(deltas, prepared, groups, calls, shares)

    def _finish(
        self, staged: _Staged, answers: Sequence[Any], short: NotReplicated | None = None
    ) -> list[Appended]:
        """The bulk's results, its threads woken; then ``short`` raised, if any (the
        deltas are stored whatever the replicas did, so they are woken either way)."""
        results, woken = bulk.outcomes(
            staged.deltas,
            staged.prepared,
            staged.groups,
            staged.shares,
            answers,
            metrics=self.metrics,
        )
        if woken:
            try:
                self.waker.wake(woken)
            except Exception:  # noqa: BLE001  # the deltas are stored: see _lost_wake_up
                _lost_wake_up(woken)
        if short is not None:
            raise short
        return results


@dataclass(slots=True)
class _Waiting:
    """One caller's validated deltas, waiting for the next shared round trip."""

    deltas: Sequence[Delta]
    prepared: list[Prepared]
    done: asyncio.Future[list[Appended]]


class AsyncProducer:
    """asyncio producer (the HTTP API uses it); wake-ups go through an :class:`AsyncWaker`
    (see :mod:`threadfold.workers.ingest.wakeup`), never blocking the event loop.

    Calls made in the same turn of the event loop share one round trip: a server busy
    with many small requests (one delta each) then makes one script call per turn
    instead of one per request, which costs the API and Redis far less than the
    requests' own exchanges (a pooled connection each, a script call each). Each call
    is still validated on its own before anything is sent, and answers only for its
    own deltas; a failure of the shared round trip fails every call in it, as their
    own round trips would have failed.
    """

    def __init__(
        self,
        client: AsyncRedis,
        settings: Settings,
        waker: AsyncWaker,
        new_id: IdSource = uuid4_str,
        metrics: Metrics | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.waker = waker
        self.new_id = new_id
        self.metrics = metrics  # as Producer's
        self.wait = settings.replica_wait
        self._waiting: list[_Waiting] = []
        self._flushes: set[asyncio.Task[None]] = set()

    async def enqueue(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        tenant: str = DEFAULT_TENANT,
    ) -> Appended:
        delta = Delta(thread_id, messages, delta_id)
        return (await self.enqueue_many([delta], path="delta", tenant=tenant))[0]

    async def enqueue_many(
        self,
        deltas: Sequence[Delta],
        path: str = "deltas",
        *,
        tenant: str = DEFAULT_TENANT,
        admit: Admit | None = None,
    ) -> list[Appended]:
        prepared = prepare_all(
            deltas, path, self.new_id, self.settings.max_json_depth,
            commits=self.settings.ingest_commits, tenant=tenant,
        )
        if admit is not None:
            admit()
        loop = asyncio.get_running_loop()
        waiting = _Waiting(deltas, prepared, loop.create_future())
        if not self._waiting:
            # Its first step runs in the loop's next turn: after the callers of this
            # turn joined (a callback that made the task then would cost a turn more).
            task = loop.create_task(self._flush())
            self._flushes.add(task)  # a strong reference until it ends
            task.add_done_callback(self._flushes.discard)
        self._waiting.append(waiting)
        return await waiting.done

    async def create(
        self,
        delta: Delta,
        metadata: Sequence[str | bytes],
        *,
        tenant: str = DEFAULT_TENANT,
        admit: Admit | None = None,
        identity: str = "",
        expect: str | None = None,
    ) -> Appended | None:
        """:meth:`Producer.create` for asyncio callers (a call of its own, never shared)."""
        [p] = prepare_all(
            [delta], "", self.new_id, self.settings.max_json_depth,
            commits=self.settings.ingest_commits, tenant=tenant,
        )
        if admit is not None:
            admit()
        call = bulk.create_call(self.settings, p, metadata, identity, expect)
        [raw], short = await self._run([call])
        created, woken = bulk.created(delta, p, raw)
        if woken:
            try:
                await self.waker.wake(woken)
            except Exception:  # noqa: BLE001  # the delta is stored: see _lost_wake_up
                _lost_wake_up(woken)
        if short is not None:
            raise short
        return created

    async def _run(self, calls: Sequence[Call]) -> Waited:
        if self.wait is None:
            return await arun_many(self.client, calls), None
        assert isinstance(self.client, aioredis.Redis)  # the settings refuse a cluster
        return await arun_waited(self.client, calls, self.wait)

    async def _flush(self) -> None:
        batch, self._waiting = self._waiting, []
        deltas = [d for w in batch for d in w.deltas]
        prepared = [p for w in batch for p in w.prepared]
        try:
            groups = bulk.group(prepared)
            calls, shares = bulk.calls(self.settings, prepared, groups)
            answers, short = await self._run(calls)
            results, woken = bulk.outcomes(
                deltas, prepared, groups, shares, answers, metrics=self.metrics
            )
        except BaseException as exc:
            for w in batch:
                if not w.done.done():
                    w.done.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        if woken:  # handed off before the callers return, as with a call of their own
            try:
                await self.waker.wake(woken)
            except Exception:  # noqa: BLE001  # the deltas are stored: see _lost_wake_up
                _lost_wake_up(woken)
        at = 0
        for w in batch:
            if not w.done.done():  # a caller that went away (cancelled) needs no answer
                if short is not None:  # stored and woken, but in doubt across a failover
                    w.done.set_exception(short)
                else:
                    w.done.set_result(results[at : at + len(w.deltas)])
            at += len(w.deltas)


def _located(exc: InvalidMessage | RequestError, k: int) -> Exception:
    """A stream's refusal of bulk ``k``: a bad message located as ``bulks[k]...``."""
    return exc.under(f"bulks[{k}].") if isinstance(exc, InvalidMessage) else exc
