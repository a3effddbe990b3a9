"""The clients' front: every thread operation as a typed method, written once.

A method turns its call into an operation of the table
(:mod:`threadfold.workers.threads.operations`) and hands it to the client's transport
(``_run``): the thread service in process (:mod:`.direct`) or the HTTP API
(:mod:`.http`). So every client has every operation, with the same arguments, results
and refusals; the argument checks are the operation's, run by the service (and by the
API for an HTTP client).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from threadfold import args
from threadfold.args import DeltaLike
from threadfold.core.context import Counter, Strategy
from threadfold.core.errors import InvalidInput
from threadfold.core.render import Format
from threadfold.core.results import (
    Appended,
    Context,
    Copied,
    Pruned,
    Searched,
    State,
    Status,
    ThreadList,
)
from threadfold.workers.feed.events import Event
from threadfold.workers.threads import checkpoint_ops as cps
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads.operations import UNSET, Unset

R = TypeVar("R")


class AsyncFront:
    """The operations every asyncio client has; a transport gives ``_run``,
    ``subscribe`` and ``close``."""

    async def _run(self, op: ops.Op[R]) -> R:
        raise NotImplementedError

    async def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        """Append one delta (message-likes, or LangChain messages) to a thread; its
        ``metadata`` is the thread's if this append creates it. A retry with the same
        ``delta_id`` is answered as the first attempt was, and appends nothing."""
        op = ops.Append(
            thread_id=thread_id, messages=messages, delta_id=delta_id, metadata=metadata
        )
        return await self._run(op)

    async def append_many(self, deltas: Iterable[DeltaLike]) -> list[Appended]:
        """Append many deltas, of many threads, in one round trip; all are checked
        before any is appended."""
        return await self._run(ops.AppendMany(deltas=args.deltas(deltas)))

    async def append_stream(
        self, bulks: Iterable[Iterable[DeltaLike]]
    ) -> AsyncIterator[list[Appended]]:
        """Append bulk after bulk (a bulk load, a replay, a rebuild), each as
        :meth:`append_many` appends its deltas; yields each bulk's results, in order,
        once they are in. ``bulks`` is read as the stream goes, so it may be longer than
        memory. A bad bulk is refused as ``bulks[k]...`` once the bulks before it are
        appended and yielded; give deltas a ``delta_id`` to make a retry of the stream
        safe. A direct client keeps one bulk in flight while it prepares the next."""
        for k, bulk in enumerate(args.bulks(bulks)):
            try:
                done = await self._run(ops.AppendMany(deltas=bulk))
            except InvalidInput as exc:
                raise exc.under(f"bulks[{k}].") from None
            yield done

    async def state(  # noqa: PLR0913  # the public read's keyword arguments: GET /state's query
        self,
        thread_id: str,
        *,
        min_version: str | None = None,
        wait: float | None = None,
        format: Format = "langchain",
        limit: int | None = None,
        after: str | None = None,
        before: str | None = None,
        at_version: str | None = None,
    ) -> State:
        """A page of the thread's merged messages and the version they reflect
        (read-your-writes with ``min_version``; time travel with ``at_version``; see
        docs/clients.md)."""
        op = ops.ReadState(
            thread_id=thread_id,
            format=format,
            min_version=min_version,
            at_version=at_version,
            wait=wait,
            limit=limit,
            before=before,
            after=after,
        )
        return await self._run(op)

    async def context(  # noqa: PLR0913  # trim_messages' arguments and a read's, as GET /context takes them
        self,
        thread_id: str,
        max_tokens: int,
        *,
        strategy: Strategy = "last",
        include_system: bool = False,
        start_on: str | Sequence[str] | None = None,
        end_on: str | Sequence[str] | None = None,
        counter: Counter = "approximate",
        format: Format = "langchain",
        min_version: str | None = None,
        wait: float | None = None,
        at_version: str | None = None,
    ) -> Context:
        """The thread's context window: its messages trimmed to ``max_tokens`` as
        LangChain's ``trim_messages`` trims, tool calls and answers kept together (see
        docs/clients.md)."""
        op = ops.ReadContext(
            thread_id=thread_id,
            max_tokens=max_tokens,
            strategy=strategy,
            include_system=include_system,
            start_on=start_on,
            end_on=end_on,
            counter=counter,
            format=format,
            min_version=min_version,
            wait=wait,
            at_version=at_version,
        )
        return await self._run(op)

    async def status(self, thread_id: str) -> Status:
        """The thread's progress (version, backlog, quarantine), metadata and lifetime."""
        return await self._run(ops.ReadStatus(thread_id=thread_id))

    async def wait_for(self, thread_id: str, version: str, timeout: float) -> str:
        """The thread's version once it reached ``version``; VersionNotReached (a
        TimeoutError) after ``timeout`` seconds."""
        return await self._run(ops.WaitFor(thread_id=thread_id, version=version, timeout=timeout))

    async def threads(self, *, limit: int = ops.THREADS_LIMIT) -> ThreadList:
        """This tenant's ``limit`` most recently active threads, latest first."""
        return await self._run(ops.Threads(limit=limit))

    async def delete(self, thread_id: str) -> None:
        """Delete the thread and its log; NotFound when there is none."""
        await self._run(ops.Delete(thread_id=thread_id))

    async def update(
        self,
        thread_id: str,
        *,
        metadata: Mapping[str, Any] | Unset = UNSET,
        ttl_seconds: float | Unset | None = UNSET,
        pinned: bool | Unset = UNSET,
    ) -> Status:
        """Change the thread's metadata (merged; a None value deletes its key), its own
        TTL (None: the deployment's) and its pin, together or not at all; its status."""
        op = ops.Update(
            thread_id=thread_id, metadata=metadata, ttl_seconds=ttl_seconds, pinned=pinned
        )
        return await self._run(op)

    async def search(
        self,
        *,
        metadata: Mapping[str, Any] | None = None,
        status: str | None = None,
        sort: str = "activity",
        limit: int = 20,
        cursor: str | None = None,
    ) -> Searched:
        """A page of this tenant's threads holding every ``metadata`` value (and in
        ``status``), latest first by ``sort``; pass its ``cursor`` for the next."""
        op = ops.Search(metadata=metadata, status=status, sort=sort, limit=limit, cursor=cursor)
        return await self._run(op)

    async def count(
        self, *, metadata: Mapping[str, Any] | None = None, status: str | None = None
    ) -> int:
        """How many threads :meth:`search` would find."""
        return (await self._run(ops.Count(metadata=metadata, status=status))).count

    async def copy(
        self,
        thread_id: str,
        to: str,
        *,
        at_version: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Copied:
        """A new thread ``to`` whose state is this one's at ``at_version`` (default: now),
        with its metadata and ``metadata``'s changes; Conflict when ``to`` exists."""
        op = ops.Copy(thread_id=thread_id, to=to, at_version=at_version, metadata=metadata)
        return await self._run(op)

    async def prune(
        self,
        *,
        prefix: str = "",
        metadata: Mapping[str, Any] | None = None,
        idle_seconds: float | None = None,
        dry_run: bool = False,
    ) -> Pruned:
        """Remove this tenant's threads whose id starts with ``prefix``, holding every
        ``metadata`` value, idle ``idle_seconds`` or more; never a pinned one."""
        op = ops.Prune(
            prefix=prefix, metadata=metadata, idle_seconds=idle_seconds, dry_run=dry_run
        )
        return await self._run(op)

    async def checkpoint(self, op: cps.CheckpointOp[R]) -> R:
        """Run an operation of a LangGraph checkpointer (:mod:`threadfold.workers.threads.
        checkpoint_ops`: put, writes, get, list, a checkpoint's messages, copy, prune,
        delete_for_runs); ``threadfold.langgraph.ThreadfoldSaver`` builds them."""
        return await self._run(op)

    def subscribe(
        self, thread_id: str, *, after: str | None = None, format: Format = "langchain"
    ) -> AsyncIterator[Event]:
        """The thread's events, for as long as the caller iterates: a snapshot (unless
        resuming ``after`` a version it holds), then one change per version; see
        :mod:`threadfold.feed`. Reconnects by itself; leave the loop to stop."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
