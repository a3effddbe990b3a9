"""The thread service's checkpoint operations (a LangGraph saver's: put, writes, get,
list, a checkpoint's messages, copy, prune, delete_for_runs), written once in asyncio;
the synchronous form is generated (``workers/threads/_sync/checkpoints.py``).

A checkpoint is stored with its thread (:mod:`threadfold.workers.storage.checkpoint_put`).
What it adds to LangGraph's contract is the live thread: a put whose messages channel
changed makes the thread's messages the checkpoint's, and records the thread's version
that holds them. The change since the parent checkpoint is appended only onto the
parent's messages (the thread's last append must be the parent's); when the thread has
moved since (another writer, a step that crashed after its append, a fork at an older
checkpoint), the thread is reset to the parent's messages read back at the parent's
version, then the change appended: either way the thread equals the checkpoint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Final

import msgspec

from threadfold.core.checkpoints import CheckpointPut, Checkpoints, Removed, Seed, Stored
from threadfold.core.convert import load_message
from threadfold.core.errors import Gone, NotFound, PoisonEntry, VersionNotReached
from threadfold.core.keys import ThreadKeys
from threadfold.core.messages import REMOVE_ALL_MESSAGES
from threadfold.core.results import Copied, Delta, State
from threadfold.core.versions import parse_version
from threadfold.workers.ingest.producer import AsyncProducer
from threadfold.workers.storage import (
    checkpoint_put,
    checkpoint_read,
    checkpoint_remove,
    checkpoint_runs,
    checkpoint_writes,
)
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.checkpoint_put import field_of
from threadfold.workers.threads import checkpoint_ops as cps
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import steps
from threadfold.workers.threads._async.listing import fan_out
from threadfold.workers.threads.steps import Target, refusals, target

#: Checkpoints one read of a list takes (a page of the namespace, newest first).
_PAGE: Final = 64
_REMOVE_ALL: Final = {"type": "remove", "id": REMOVE_ALL_MESSAGES, "content": ""}
_json = msgspec.json.Encoder().encode
_md = msgspec.json.Decoder(dict[str, object])


class AsyncCheckpointOps:
    """The checkpoint operations of :class:`AsyncService` (a part of it: these are the
    service's attributes it reads)."""

    store: AsyncStore
    producer: AsyncProducer
    checks: steps.Checks

    if TYPE_CHECKING:  # the service's own, which these operations call

        async def state(self, tenant: str, op: ops.ReadState) -> State: ...

        async def copy(self, tenant: str, op: ops.Copy) -> Copied: ...

    async def put_checkpoint(
        self, tenant: str, op: cps.PutCheckpoint
    ) -> CheckpointPut:
        at = target(tenant, op.thread_id)
        op.checked()
        version = None
        ns = op.checkpoint_ns
        with refusals:
            if op.messages is not None and ns == "":
                version = await self._project(tenant, at, op)
                if version is None:
                    return CheckpointPut(whole=True)
            names = [checkpoint_put.blob_field(ns, c, v) for c, v in (op.versions or {}).items()]
            rec = checkpoint_put.record(
                op.parent_id, op.run_id, names,
                (op.checkpoint, op.metadata, _json(op.filterable or {})),
            )
            call = checkpoint_put.call(
                self._keys(at), ns, op.checkpoint_id, rec, version=version,
                parent=op.parent_id, run=op.run_id, blobs=op.blobs,
            )
            recorded = checkpoint_put.parse(await self.store.checkpoint_write(call))
        return CheckpointPut(version=recorded)

    async def _project(
        self, tenant: str, at: Target, op: cps.PutCheckpoint
    ) -> str | None:
        """The thread's messages made the checkpoint's: the version that holds them, or
        None when the change cannot be laid on the parent's (the saver sends them whole)."""
        # Loaded as LangChain loads a dump (an HTTP client's messages are JSON): every
        # field stays one, as a direct client's message objects keep them.
        messages = [load_message(m, f"messages[{i}]") for i, m in enumerate(op.messages or ())]
        admit = self.checks.admission(tenant, 1)
        if op.whole:
            delta = Delta(at.thread_id, [_REMOVE_ALL, *messages])
            done = await self.producer.enqueue_many([delta], "messages", tenant=tenant,
                                                    admit=admit)
            return done[0].version
        base = await self._recorded(at, op.checkpoint_ns, op.parent_id)
        if base is None:
            return None
        if not messages:
            return base
        change = Delta(at.thread_id, messages)
        made = await self.producer.create(change, [], tenant=tenant, admit=admit, expect=base)
        if made is not None:
            return made.version
        parent = await self._messages_at(tenant, at, base)
        if parent is None:
            return None
        reset = Delta(at.thread_id, [_REMOVE_ALL, *parent])
        done = await self.producer.enqueue_many([reset, change], "messages", tenant=tenant)
        return done[-1].version

    async def _recorded(
        self, at: Target, ns: str, checkpoint_id: str | None
    ) -> str | None:
        if checkpoint_id is None:
            return None
        call = checkpoint_read.version(self._keys(at), field_of(ns, checkpoint_id))
        return checkpoint_read.parse_version(await self.store.checkpoint_read(call))

    async def _messages_at(
        self, tenant: str, at: Target, version: str, wait: float = 5.0
    ) -> list[dict[str, Any]] | None:
        """The thread's messages at ``version``: its live state once folded that far, if
        that is the state there; else read back from the log (None when retention
        trimmed it, or the thread is gone)."""
        try:
            # The live state first, one read: the common case (a graph resuming its
            # latest checkpoint) is the thread as it stands. Behind it, the fold is
            # waited for; past it, the log is read back.
            live = await self.state(tenant, ops.ReadState(thread_id=at.thread_id))
            if parse_version(live.version) < parse_version(version):
                live = await self.state(tenant, ops.ReadState(
                    thread_id=at.thread_id, min_version=version, wait=wait))
            if live.version == version:
                return list(live.messages)
            then = await self.state(tenant, ops.ReadState(
                thread_id=at.thread_id, at_version=version))
            return list(then.messages)
        except (Gone, NotFound, VersionNotReached, PoisonEntry):
            return None

    async def put_writes(self, tenant: str, op: cps.PutWrites) -> None:
        at = target(tenant, op.thread_id)
        op.checked()
        if op.writes:
            call = checkpoint_writes.call(
                self._keys(at), op.checkpoint_ns, op.checkpoint_id, op.writes)
            with refusals:
                await self.store.checkpoint_write(call)

    async def get_checkpoint(self, tenant: str, op: cps.GetCheckpoint) -> Checkpoints:
        at = target(tenant, op.thread_id)
        op.checked()
        k = self._keys(at)
        if op.checkpoint_id is None:
            call = checkpoint_read.latest(k, op.checkpoint_ns)
        else:
            call = checkpoint_read.pick(k, [field_of(op.checkpoint_ns, op.checkpoint_id)])
        with refusals:
            return Checkpoints(checkpoint_read.parse(await self.store.checkpoint_read(call)))

    async def list_checkpoints(
        self, tenant: str, op: cps.ListCheckpoints
    ) -> Checkpoints:
        at = target(tenant, op.thread_id)
        found: list[Stored] = []
        with refusals:
            async for page in self._pages(at, op):
                for full in page:
                    if _holds(full.filterable, op.filter):
                        found.append(full.stored)
                        if len(found) >= op.limit:
                            return Checkpoints(found)
        return Checkpoints(found)

    async def _pages(
        self, at: Target, op: cps.ListCheckpoints
    ) -> AsyncGenerator[list[checkpoint_read.Full], None]:
        """The thread's checkpoints newest first, a page at a time."""
        k = self._keys(at)
        if op.checkpoint_ns is None:  # every namespace: ordered by id across them
            names = checkpoint_read.parse_fields(
                await self.store.checkpoint_read(checkpoint_read.fields(k)))
            names.sort(key=lambda f: f.rpartition("\n")[2], reverse=True)
            names = [f for f in names if op.before is None
                     or f.rpartition("\n")[2] < op.before]
            for i in range(0, len(names), _PAGE):
                call = checkpoint_read.pick(k, names[i : i + _PAGE])
                yield checkpoint_read.parse_full(await self.store.checkpoint_read(call))
            return
        before = op.before
        while True:
            call = checkpoint_read.page(k, op.checkpoint_ns, before, _PAGE)
            page = checkpoint_read.parse_full(await self.store.checkpoint_read(call))
            yield page
            if len(page) < _PAGE:
                return
            before = page[-1].stored.checkpoint_id

    async def checkpoint_messages(
        self, tenant: str, op: cps.CheckpointMessages
    ) -> Seed:
        at = target(tenant, op.thread_id)
        given, wait = op.checked()
        with refusals:
            version = given  # the saver read it with the checkpoint: no second read
            if version is None:
                version = await self._recorded(at, op.checkpoint_ns, op.checkpoint_id)
            if version is None or op.checkpoint_ns != "":
                return Seed()
            return Seed(version, await self._messages_at(tenant, at, version, wait))

    async def copy_checkpoints(
        self, tenant: str, op: cps.CopyCheckpoints
    ) -> Removed:
        """The source's checkpoints stored again under ``to`` (a thread of another slot,
        on a cluster: read, then written); the thread's messages copied first, and the
        copy's version recorded on the latest root checkpoint."""
        source = target(tenant, op.thread_id)
        to = target(tenant, op.checked())
        with refusals:
            k = self._keys(source)
            names = checkpoint_read.parse_fields(
                await self.store.checkpoint_read(checkpoint_read.fields(k)))
            if not names:
                return Removed(0)
            full = checkpoint_read.parse_full(
                await self.store.checkpoint_read(checkpoint_read.pick(k, names)))
            copied = await self.copy(tenant, ops.Copy(thread_id=op.thread_id, to=op.to))
            latest = max((f.stored.checkpoint_id for f in full
                          if f.stored.checkpoint_ns == ""), default=None)
            for f in full:
                mine = f.stored.checkpoint_id == latest and f.stored.checkpoint_ns == ""
                await self._store_copy(to, f, copied.version if mine else None)
        return Removed(len(full))

    async def _store_copy(
        self, to: Target, full: checkpoint_read.Full, version: str | None
    ) -> None:
        s = full.stored
        names = [checkpoint_put.blob_field(s.checkpoint_ns, b.channel, b.version)
                 for b in s.blobs]
        rec = checkpoint_put.record(s.parent_id, full.run, names,
                                    (s.checkpoint, s.metadata, full.filterable))
        k = self._keys(to)
        await self.store.checkpoint_write(checkpoint_put.call(
            k, s.checkpoint_ns, s.checkpoint_id, rec, version=version, parent=None,
            run=full.run, blobs=s.blobs))
        if s.writes:
            await self.store.checkpoint_write(
                checkpoint_writes.call(k, s.checkpoint_ns, s.checkpoint_id, s.writes))

    async def prune_checkpoints(
        self, tenant: str, op: cps.PruneCheckpoints
    ) -> Removed:
        mode: checkpoint_remove.Mode = "latest" if op.strategy == "keep_latest" else "all"
        removed = 0
        with refusals:
            for thread_id in op.thread_ids:
                call = checkpoint_remove.call(self._keys(target(tenant, thread_id)), mode)
                removed += checkpoint_remove.parse(await self.store.checkpoint_write(call))
        return Removed(removed)

    async def delete_runs(self, tenant: str, op: cps.DeleteRuns) -> Removed:
        runs = op.checked()
        if not runs:
            return Removed(0)
        ks = self.store.keyspace
        calls = [checkpoint_runs.call(ks, b, tenant, runs) for b in range(ks.buckets)]
        with refusals:
            answers = await fan_out(self.store.client, calls)
        return Removed(sum(checkpoint_runs.parse(a) for a in answers))

    def _keys(self, at: Target) -> ThreadKeys:
        return self.store.keyspace.thread(at.ref)


def _holds(filterable: bytes, wanted: object) -> bool:
    """Whether a checkpoint's metadata holds every wanted value (LangGraph's exact
    match per key)."""
    if not wanted:
        return True
    assert isinstance(wanted, dict)
    md = _md.decode(filterable)
    return all(key in md and md[key] == value for key, value in wanted.items())


__all__ = ["AsyncCheckpointOps"]
