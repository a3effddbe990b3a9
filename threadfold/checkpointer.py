"""LangGraph's checkpointer on threadfold: ``ThreadfoldSaver(client)``.

A ``langgraph.checkpoint.base.BaseCheckpointSaver`` over any threadfold client: a
graph compiled with it (``builder.compile(checkpointer=ThreadfoldSaver(client))``) keeps
its checkpoints, their channel values and pending writes with the thread named by its
``thread_id``, in Redis, through the thread service (:mod:`threadfold.workers.threads.
checkpoint_ops`). ``Client`` and ``HttpClient`` serve the sync methods, ``AsyncClient``
and ``AsyncHttpClient`` the ``a``-prefixed ones; the other kind is refused with a
``TypeError``. The values are serialized by LangGraph's own serializer and stored as
given.

What it adds to a saver is the live thread: the graph's conversation is a threadfold
thread. Each root checkpoint whose messages channel (``messages_key``) changed makes the
thread's messages the channel's, sent as the change since the parent checkpoint (the
thread service lays it on the parent's messages, or resets the thread to them first),
so ``subscribe``, ``/ui``, ``context``, search and copy serve the conversation as the
graph has it. And a ``DeltaChannel`` of messages is loaded in one call, whatever the
thread's length: its value at a checkpoint is the thread's messages at the version the
checkpoint recorded (``get_delta_channel_history``), where other savers walk the parent
checkpoints one by one. Needs the ``langchain`` extra.
"""

from __future__ import annotations

import contextlib
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Final, NamedTuple, TypeVar, cast

import msgspec

from threadfold.extras import needs

with needs("threadfold.langgraph", "langchain_core", "langgraph"):
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        RemoveMessage,
        SystemMessage,
        ToolMessage,
    )
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        DeltaChannelHistory,
        PendingWrite,
        get_checkpoint_metadata,
        writes_sort_key,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
    from langgraph.checkpoint.serde.types import _DeltaSnapshot
    from langgraph.graph.message import _messages_delta_reducer

from threadfold.conversation import Client, is_async
from threadfold.core.checkpoints import Blob, Stored, Typed, Write
from threadfold.errors import NotFound
from threadfold.langchain import to_langchain
from threadfold.types import AsyncClientProtocol, ClientProtocol
from threadfold.workers.threads import checkpoint_ops as cps

__all__ = ["ThreadfoldSaver"]

K = TypeVar("K")
V = TypeVar("V")
#: Checkpoints whose messages (and messages writes) a saver remembers, the least
#: recently used forgotten first: the parents its next puts name.
REMEMBERED: Final = 1_024


class _Projection(NamedTuple):
    """What a put sends of the messages channel: ``messages`` (None: the thread keeps
    what it has), whole or as the change since the parent; and, where known here, the
    checkpoint's messages (``value``) and that change (``delta``)."""

    messages: list[BaseMessage] | None
    whole: bool
    value: list[Any] | None
    delta: list[Any] | None


_UNCHANGED: Final = _Projection(None, True, None, None)


class _Lru(OrderedDict[K, V]):
    def remember(self, key: K, value: V) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > REMEMBERED:
            self.popitem(last=False)


def _ids(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config."""
    conf = config.get("configurable") or {}
    thread_id = conf.get("thread_id")
    if thread_id is None:
        raise ValueError("ThreadfoldSaver needs config['configurable']['thread_id']")
    return str(thread_id), conf.get("checkpoint_ns", ""), conf.get("checkpoint_id")


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                             "checkpoint_id": checkpoint_id}}


def _filterable(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata's keys whose values JSON holds: what ``list``'s filter matches."""
    out = {}
    for key, value in metadata.items():
        try:
            msgspec.json.encode(value)
        except (TypeError, ValueError, OverflowError):
            continue
        out[key] = value
    return out


def change(old: Sequence[BaseMessage], new: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """One delta that turns ``old`` into ``new`` under ``add_messages`` (the removed ids,
    the messages changed in place, the new ones at the end), or None when ``new`` is no
    such change of ``old`` (a reorder, a message without an id, a repeated id)."""
    old_ids, new_ids = [m.id for m in old], [m.id for m in new]
    if None in old_ids or None in new_ids or len(set(new_ids)) < len(new_ids):
        return None
    if len(set(old_ids)) < len(old_ids):
        return None
    at = {mid: i for i, mid in enumerate(old_ids)}
    kept = [mid for mid in new_ids if mid in at]
    kept_set = set(kept)
    if new_ids[: len(kept)] != kept or kept != [mid for mid in old_ids if mid in kept_set]:
        return None
    wanted = set(new_ids)
    gone: list[BaseMessage] = [RemoveMessage(id=str(mid)) for mid in old_ids
                               if mid not in wanted]
    # The reducer keeps an unchanged message's object: identity first, equality (every
    # field compared) only for the others.
    edited = [m for m in new[: len(kept)] if m is not old[at[m.id]] and m != old[at[m.id]]]
    return gone + edited + list(new[len(kept) :])


#: LangChain's message classes by the ``type`` of their dump.
_CLASSES: Final[dict[str, type[BaseMessage]]] = {
    cls.model_fields["type"].default: cls
    for cls in (HumanMessage, AIMessage, ToolMessage, SystemMessage, ChatMessage,
                FunctionMessage, RemoveMessage)
}


def loaded(dumps: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """A thread's messages (LangChain's ``model_dump()`` form) as LangChain's objects.

    A complete dump (every field of its class, as a state read gives) is the object's
    own fields, already checked when it was stored: it is built without validating
    again (``model_construct``), equal to the validated object and a third of its cost
    on a long thread's load; anything else goes through ``messages_from_dict``."""
    out: list[BaseMessage] = []
    for d in dumps:
        cls = _CLASSES.get(d.get("type", ""))
        if cls is not None and d.keys() == cls.model_fields.keys():
            out.append(cls.model_construct(**d))
        else:
            out.extend(to_langchain([d]))
    return out


def _prune_op(thread_ids: Sequence[str], strategy: str) -> cps.PruneCheckpoints:
    if strategy == "keep_latest":
        return cps.PruneCheckpoints(thread_ids=[str(t) for t in thread_ids])
    if strategy == "delete":
        return cps.PruneCheckpoints(thread_ids=[str(t) for t in thread_ids], strategy="delete")
    raise ValueError(f"prune strategy must be 'keep_latest' or 'delete'; got {strategy!r}")


def _wire(messages: Sequence[Any]) -> list[BaseMessage] | None:
    """The messages as the thread takes them (LangChain's objects, which the clients
    send as LangChain's dump); None when the channel holds something else (a messages
    key with another reducer: no live thread then)."""
    if not all(isinstance(m, BaseMessage) for m in messages):
        return None
    return list(messages)


class ThreadfoldSaver(BaseCheckpointSaver[str]):
    """LangGraph's checkpointer, with the graph's conversation kept as a live thread.

    ``client``: ``threadfold.Client`` or ``HttpClient`` for a graph's sync methods
    (``invoke``, ``stream``, ``get_state``), ``AsyncClient`` or ``AsyncHttpClient`` for
    the asyncio ones. ``messages_key``: the state key of the messages
    (``MessagesState``'s ``"messages"``), an ``add_messages`` channel or a
    ``DeltaChannel`` of ``_messages_delta_reducer``.
    """

    def __init__(
        self,
        client: Client,
        *,
        messages_key: str = "messages",
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        self.client = client
        self.messages_key = messages_key
        self._async = is_async(client)
        #: (thread_id, checkpoint_id) -> the messages channel's value there.
        self._values: _Lru[tuple[str, str], list[BaseMessage]] = _Lru()
        #: (thread_id, checkpoint_id) -> the thread's version it recorded (read with it).
        self._versions: _Lru[tuple[str, str], str] = _Lru()
        #: (thread_id, checkpoint_id) -> its messages writes: (sort key, messages).
        self._writes: _Lru[tuple[str, str], dict[tuple[str, int], tuple[Any, Any]]] = _Lru()

    # -- the client of each form -----------------------------------------------------------

    def _sync(self, method: str) -> ClientProtocol:
        if self._async:
            raise TypeError(
                f"ThreadfoldSaver.{method} is synchronous and this saver's client is "
                f"asynchronous: use a{method} (or give it a threadfold.Client / HttpClient)"
            )
        return cast(ClientProtocol, self.client)

    def _asyncio(self, method: str) -> AsyncClientProtocol:
        if not self._async:
            raise TypeError(
                f"ThreadfoldSaver.a{method} is asyncio and this saver's client is "
                f"synchronous: use {method} (or give it a threadfold.AsyncClient / "
                "AsyncHttpClient)"
            )
        return cast(AsyncClientProtocol, self.client)

    # -- values ----------------------------------------------------------------------------

    def _typed(self, value: Any) -> Typed:
        kind, data = self.serde.dumps_typed(value)
        return Typed(kind, data)

    def _tuple(self, thread_id: str, s: Stored) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed((s.checkpoint.type, s.checkpoint.data))
        checkpoint["channel_values"] = {
            b.channel: self.serde.loads_typed((b.value.type, b.value.data))
            for b in s.blobs if b.value is not None and b.value.type != "empty"
        }
        writes = sorted(s.writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        pending = [(w.task_id, w.channel, self.serde.loads_typed((w.value.type, w.value.data)))
                   for w in writes]
        if s.checkpoint_ns == "":
            self._remember(thread_id, s.checkpoint_id, checkpoint, writes, pending)
            if s.version is not None:
                self._versions.remember((thread_id, s.checkpoint_id), s.version)
        parent = _config(thread_id, s.checkpoint_ns, s.parent_id) if s.parent_id else None
        return CheckpointTuple(
            config=_config(thread_id, s.checkpoint_ns, s.checkpoint_id),
            checkpoint=checkpoint,
            metadata=self.serde.loads_typed((s.metadata.type, s.metadata.data)),
            parent_config=parent,
            pending_writes=pending,
        )

    def _remember(
        self, thread_id: str, checkpoint_id: str, checkpoint: Checkpoint,
        writes: Sequence[Write], pending: Sequence[PendingWrite],
    ) -> None:
        """What a loaded checkpoint tells the next put: its messages, its messages writes."""
        value = checkpoint["channel_values"].get(self.messages_key)
        if isinstance(value, _DeltaSnapshot):
            value = value.value
        if isinstance(value, list):
            self._values.remember((thread_id, checkpoint_id), value)
        mine = {(w.task_id, w.idx): (writes_sort_key(w.task_path, w.task_id, w.idx), p[2])
                for w, p in zip(writes, pending, strict=True) if w.channel == self.messages_key}
        self._writes.remember((thread_id, checkpoint_id), mine)

    def _put_op(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions, p: _Projection,
    ) -> cps.PutCheckpoint:
        thread_id, ns, parent = _ids(config)
        copy = checkpoint.copy()
        values = copy.pop("channel_values")  # type: ignore[misc]
        md = get_checkpoint_metadata(config, metadata)
        blobs = [Blob(ch, str(v), self._typed(values[ch]) if ch in values else None)
                 for ch, v in new_versions.items()]
        run = md.get("run_id")
        return cps.PutCheckpoint(
            thread_id=thread_id, checkpoint_id=checkpoint["id"], checkpoint=self._typed(copy),
            metadata=self._typed(md), checkpoint_ns=ns, parent_id=parent,
            filterable=_filterable(md), run_id=None if run is None else str(run),
            versions={ch: str(v) for ch, v in checkpoint["channel_versions"].items()},
            blobs=blobs, messages=p.messages, whole=p.whole,
        )

    def _projection(
        self, config: RunnableConfig, checkpoint: Checkpoint, new_versions: ChannelVersions,
    ) -> _Projection | None:
        """What a put sends of the messages; None when the parent's messages writes are
        not known here (another process wrote them: the caller loads the parent)."""
        thread_id, ns, parent = _ids(config)
        if ns != "":
            return _UNCHANGED
        key = self.messages_key
        value = checkpoint["channel_values"].get(key)
        if isinstance(value, _DeltaSnapshot):
            value = value.value
        if isinstance(value, list):
            self._values.remember((thread_id, checkpoint["id"]), value)
            before = self._values.get((thread_id, parent)) if parent else None
            delta = None if before is None else change(before, value)
            if delta is not None:
                return _Projection(_wire(delta), False, value, delta)
            return _Projection(_wire(value), True, value, None)
        if parent is None:
            return _Projection([], True, [], None)  # the thread exists from the first on
        if key not in new_versions:
            return _UNCHANGED
        written = self._writes.get((thread_id, parent))
        if written is None:
            return None
        ordered = [v for _, v in sorted(written.values(), key=lambda x: x[0])]
        flat = [m for v in ordered for m in (v if isinstance(v, list) else [v])]
        return _Projection(_wire(flat), False, None, flat)

    def _parent(self, config: RunnableConfig) -> RunnableConfig:
        thread_id, ns, parent = _ids(config)
        assert parent is not None
        return _config(thread_id, ns, parent)

    def _writes_op(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str,
    ) -> cps.PutWrites:
        thread_id, ns, checkpoint_id = _ids(config)
        assert checkpoint_id is not None, "put_writes needs a checkpoint_id"
        out = [Write(task_id, WRITES_IDX_MAP.get(ch, i), ch, self._typed(v), task_path)
               for i, (ch, v) in enumerate(writes)]
        if ns == "":
            mine = self._writes.setdefault((thread_id, checkpoint_id), {})
            for w, (ch, v) in zip(out, writes, strict=True):
                if ch == self.messages_key and (w.idx < 0 or (task_id, w.idx) not in mine):
                    mine[(task_id, w.idx)] = (writes_sort_key(task_path, task_id, w.idx), v)
        return cps.PutWrites(thread_id=thread_id, checkpoint_id=checkpoint_id,
                             checkpoint_ns=ns, writes=out)

    def _list_op(
        self, config: RunnableConfig | None, filter: dict[str, Any] | None,
        before: RunnableConfig | None, limit: int | None,
    ) -> cps.ListCheckpoints:
        if config is None:
            raise ValueError("ThreadfoldSaver lists one thread's checkpoints: give a config "
                             "with a thread_id")
        thread_id, _, _ = _ids(config)
        conf = config.get("configurable") or {}
        return cps.ListCheckpoints(
            thread_id=thread_id, checkpoint_ns=conf.get("checkpoint_ns"),
            # LangGraph's replay names ``before`` by its checkpoint id alone.
            before=(before.get("configurable") or {}).get("checkpoint_id") if before else None,
            filter=filter,
            limit=cps.LIST_LIMIT if limit is None else limit,
        )

    def _history(
        self, seed: Any, channels: Sequence[str]
    ) -> dict[str, DeltaChannelHistory] | None:
        if seed.messages is None:
            return None
        return {self.messages_key: {"writes": [], "seed": loaded(seed.messages)}}

    def get_next_version(self, current: str | None, channel: None) -> str:
        """As LangGraph's own savers: a counter, then a random tail (two writers of a
        version never collide)."""
        n = 0 if current is None else int(str(current).split(".")[0])
        return f"{n + 1:032}.{random.random():016}"  # noqa: S311  # not a secret

    # -- sync ------------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns, checkpoint_id = _ids(config)
        op = cps.GetCheckpoint(thread_id=thread_id, checkpoint_ns=ns, checkpoint_id=checkpoint_id)
        found = self._sync("get_tuple").checkpoint(op).checkpoints
        return self._tuple(thread_id, found[0]) if found else None

    def list(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        op = self._list_op(config, filter, before, limit)
        for s in self._sync("list").checkpoint(op).checkpoints:
            yield self._tuple(op.thread_id, s)

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        client = self._sync("put")
        p = self._projection(config, checkpoint, new_versions)
        if p is None:  # the parent's writes are another process's: loaded, then known
            self.get_tuple(self._parent(config))
            p = self._projection(config, checkpoint, new_versions) or _UNCHANGED
        op = self._put_op(config, checkpoint, metadata, new_versions, p)
        if client.checkpoint(op).whole:
            history = None
            if p.value is None:
                history = self.get_delta_channel_history(
                    config=config, channels=[self.messages_key])
            client.checkpoint(self._whole(op, p, history))
        return _config(op.thread_id, op.checkpoint_ns, op.checkpoint_id)

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        self._sync("put_writes").checkpoint(self._writes_op(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        with contextlib.suppress(NotFound):  # a thread never written: nothing to delete
            self._sync("delete_thread").delete(str(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._sync("delete_for_runs").checkpoint(cps.DeleteRuns(run_ids=list(run_ids)))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        op = cps.CopyCheckpoints(thread_id=str(source_thread_id), to=str(target_thread_id))
        self._sync("copy_thread").checkpoint(op)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._sync("prune").checkpoint(_prune_op(thread_ids, strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        thread_id, ns, checkpoint_id = _ids(config)
        out: dict[str, DeltaChannelHistory] = {}
        if self.messages_key in channels and ns == "" and checkpoint_id is not None:
            op = cps.CheckpointMessages(
                thread_id=thread_id, checkpoint_id=checkpoint_id,
                version=self._versions.get((thread_id, checkpoint_id)))
            out = self._history(self._sync("get_tuple").checkpoint(op), channels) or {}
        rest = [c for c in channels if c not in out]
        if rest:
            out.update(super().get_delta_channel_history(config=config, channels=rest))
        return out

    # -- asyncio ---------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns, checkpoint_id = _ids(config)
        op = cps.GetCheckpoint(thread_id=thread_id, checkpoint_ns=ns, checkpoint_id=checkpoint_id)
        found = (await self._asyncio("get_tuple").checkpoint(op)).checkpoints
        return self._tuple(thread_id, found[0]) if found else None

    async def alist(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        op = self._list_op(config, filter, before, limit)
        for s in (await self._asyncio("list").checkpoint(op)).checkpoints:
            yield self._tuple(op.thread_id, s)

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        client = self._asyncio("put")
        p = self._projection(config, checkpoint, new_versions)
        if p is None:  # the parent's writes are another process's: loaded, then known
            await self.aget_tuple(self._parent(config))
            p = self._projection(config, checkpoint, new_versions) or _UNCHANGED
        op = self._put_op(config, checkpoint, metadata, new_versions, p)
        if (await client.checkpoint(op)).whole:
            history = None
            if p.value is None:
                history = await self.aget_delta_channel_history(
                    config=config, channels=[self.messages_key])
            await client.checkpoint(self._whole(op, p, history))
        return _config(op.thread_id, op.checkpoint_ns, op.checkpoint_id)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        op = self._writes_op(config, writes, task_id, task_path)
        await self._asyncio("put_writes").checkpoint(op)

    async def adelete_thread(self, thread_id: str) -> None:
        with contextlib.suppress(NotFound):
            await self._asyncio("delete_thread").delete(str(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._asyncio("delete_for_runs").checkpoint(cps.DeleteRuns(run_ids=list(run_ids)))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        op = cps.CopyCheckpoints(thread_id=str(source_thread_id), to=str(target_thread_id))
        await self._asyncio("copy_thread").checkpoint(op)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._asyncio("prune").checkpoint(_prune_op(thread_ids, strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        thread_id, ns, checkpoint_id = _ids(config)
        out: dict[str, DeltaChannelHistory] = {}
        if self.messages_key in channels and ns == "" and checkpoint_id is not None:
            op = cps.CheckpointMessages(
                thread_id=thread_id, checkpoint_id=checkpoint_id,
                version=self._versions.get((thread_id, checkpoint_id)))
            seed = await self._asyncio("get_tuple").checkpoint(op)
            out = self._history(seed, channels) or {}
        rest = [c for c in channels if c not in out]
        if rest:
            out.update(await super().aget_delta_channel_history(config=config, channels=rest))
        return out

    # -- a put sent whole --------------------------------------------------------------------

    def _whole(
        self, op: cps.PutCheckpoint, p: _Projection,
        history: Mapping[str, DeltaChannelHistory] | None,
    ) -> cps.PutCheckpoint:
        """``op`` with the checkpoint's messages whole: known, or the parent's (the
        channel's history up to it, folded) with the change since."""
        value = p.value
        if value is None:
            h = (history or {}).get(self.messages_key, {"writes": []})
            seed: Any = h.get("seed", [])
            if isinstance(seed, _DeltaSnapshot):
                seed = seed.value
            value = _messages_delta_reducer(
                list(seed), [w[2] for w in h["writes"]] + [list(p.delta or [])]
            )
        return msgspec.structs.replace(op, messages=_wire(value), whole=True)
