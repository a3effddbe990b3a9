"""LangGraph integration: graphs that keep their conversation in a threadfold thread.

``ThreadfoldMessages(client, thread_id)`` loads the thread as a graph's input
(``load()``) and runs a compiled graph (``stream(graph, input, config)``), appending
each message write a node makes to the thread as the node finishes: one delta per
task, whose ``delta_id`` is ``"<run_id>:<step>:<node>"`` (``:<k>`` added for the k-th
other task of that node in the step, a ``Send`` fan-out). A run retried with the same
``run_id`` therefore appends nothing twice (within ``THREADFOLD_DEDUPE_WINDOW_SECONDS``),
and graphs (agents) running at once on one thread each append their own writes: the
thread is the one-at-a-time fold of all of them, in the order of its log.

Why a ``stream`` of our own rather than forwarding ``graph.stream(..., stream_mode=
"updates")``: an update says which node wrote, not in which step, nor which of two
tasks of one node; LangGraph's ``debug`` events do (the step of each task, its id,
its writes), so the graph is streamed with them added, and they are dropped from what
the caller receives unless asked for.

Ids: a message object a node returns keeps its id; one without an id is given the id
the thread stored (derived from the delta_id), before LangGraph's reducer would stamp a
random one, so the graph's state and the thread agree (docs/integrations.md: where they
cannot). Needs the ``langchain`` extra.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter, defaultdict, deque
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from threadfold.extras import needs

with needs("threadfold.langgraph", "langchain_core", "langgraph"):
    from langchain_core.messages import BaseMessage, RemoveMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.pregel.protocol import PregelProtocol
    from langgraph.types import Overwrite, StreamMode

from threadfold.checkpointer import ThreadfoldSaver
from threadfold.conversation import Client, Conversation, OnThread
from threadfold.core.ids import MAX_DELTA_ID
from threadfold.core.messages import REMOVE_ALL_MESSAGES
from threadfold.langchain import to_langchain
from threadfold.types import Appended

__all__ = ["MAX_DELTA_ID", "ThreadfoldMessages", "ThreadfoldSaver", "delta_id"]

Graph = PregelProtocol[Any, Any, Any, Any]


# LangGraph's forms of an overwrite besides the ``Overwrite`` object (see
# ``langgraph.channels.binop._get_overwrite``, private, hence matched here).
_OVERWRITE: Final = "__overwrite__"


def delta_id(run_id: str, step: int, node: str, rank: int = 0) -> str:
    """The delta_id of a task's message write: ``run_id:step:node`` (``:rank`` for the
    rank-th other task of ``node`` in that step). A node name that would make it longer
    than the service takes is replaced by its digest."""
    tail = f":{rank}" if rank else ""
    made = f"{run_id}:{step}:{node}{tail}"
    if len(made) <= MAX_DELTA_ID:
        return made
    digest = hashlib.sha256(node.encode()).hexdigest()
    return f"{run_id}:{step}:{digest}{tail}"[:MAX_DELTA_ID]


class ThreadfoldMessages(OnThread):
    """A graph's conversation kept in the thread ``thread_id``, through ``client``
    (``threadfold.Client``, ``AsyncClient``, ``HttpClient`` or ``AsyncHttpClient``).

    ``key`` is the state key of the messages (``MessagesState``'s ``"messages"``).
    ``load()`` reads the thread as LangChain messages, waiting up to ``wait`` seconds
    for what was appended to it through the client to be folded (``read_your_writes``).
    A sync client serves ``load``, ``append`` and ``stream``; an asyncio client
    ``aload``, ``aappend`` and ``astream`` (a sync one serves those too, from a worker
    thread).
    """

    def __init__(
        self,
        client: Client,
        thread_id: str,
        *,
        key: str = "messages",
        wait: float = 10.0,
        read_your_writes: bool = True,
    ) -> None:
        self._thread = Conversation(client, thread_id, wait=wait, read_your_writes=read_your_writes)
        self.key = key

    def load(self) -> list[BaseMessage]:
        """The thread's messages, for a graph's input: ``{"messages": tm.load()}``."""
        return to_langchain(self._thread.read())

    async def aload(self) -> list[BaseMessage]:
        return to_langchain(await self._thread.aread())

    def append(self, messages: Sequence[Any], *, delta_id: str | None = None) -> Appended:
        """Append messages to the thread (a user's turn, before running a graph on it);
        ``load()`` then sees them."""
        return self._thread.append(messages, delta_id=delta_id)

    async def aappend(self, messages: Sequence[Any], *, delta_id: str | None = None) -> Appended:
        return await self._thread.aappend(messages, delta_id=delta_id)

    def stream(
        self,
        graph: Graph,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] = "updates",
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run ``graph`` as ``graph.stream(input, config, stream_mode=..., **kwargs)``
        does, yielding the same chunks, and append each task's message write to the
        thread as the task finishes: before its update is yielded.

        ``config["run_id"]`` names the run in the delta_ids: give a new one per run, the
        same one only to retry that run (one is made when the config has none).
        """
        self._thread.check_sync("stream")
        run = _Run(config, self.key, stream_mode, kwargs)
        for item in graph.stream(input, run.config, stream_mode=run.modes, **kwargs):
            for write in run.feed(item):
                done = self._thread.append(write.messages, delta_id=write.delta_id)
                _adopt(write.messages, done.ids)
            yield from run.ready()
        yield from run.ready(everything=True)

    async def astream(
        self,
        graph: Graph,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] = "updates",
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """The asyncio twin of :meth:`stream` (``graph.astream``)."""
        run = _Run(config, self.key, stream_mode, kwargs)
        async for item in graph.astream(input, run.config, stream_mode=run.modes, **kwargs):
            for write in run.feed(item):
                done = await self._thread.aappend(write.messages, delta_id=write.delta_id)
                _adopt(write.messages, done.ids)
            for chunk in run.ready():
                yield chunk
        for chunk in run.ready(everything=True):
            yield chunk

    def __repr__(self) -> str:
        return f"<ThreadfoldMessages thread_id={self.thread_id!r} client={self.client!r}>"


def _adopt(messages: Sequence[Any], ids: Sequence[str]) -> None:
    """Give the id-less message objects of an appended write the ids the thread stamped.

    Within a step of several tasks LangGraph's reducer has not run yet when a task's
    write is streamed; it would stamp a random id, and a later write that targets the
    message by id would miss it in the thread. The thread's ids derive from the
    delta_id: a retry of the run gets the same. Dicts, strings and pairs are converted
    by LangGraph into objects of its own, out of reach here.
    """
    for message, stored in zip(messages, ids, strict=True):
        if isinstance(message, BaseMessage) and message.id is None:
            message.id = stored


@dataclass(frozen=True, slots=True)
class _Write:
    delta_id: str
    messages: list[Any]


@dataclass(frozen=True, slots=True)
class _Task:
    step: int
    name: str
    rank: int


@dataclass(slots=True)
class _Out:
    """A chunk for the caller; ``update`` while it waits for its task's write."""

    chunk: Any
    update: Mapping[str, Any] | None = None


class _Run:
    """One run of a graph, streamed with ``updates`` and ``debug`` added to the caller's
    modes: which task each write comes from (``debug`` events carry the step and the
    task of each result), its delta_id, and the caller's chunks, each held until the
    write it reports is appended (LangGraph streams a task's update just before its
    result)."""

    def __init__(
        self,
        config: RunnableConfig | None,
        key: str,
        stream_mode: StreamMode | Sequence[StreamMode],
        kwargs: Mapping[str, Any],
    ) -> None:
        given: RunnableConfig = {**(config or {})}
        if given.get("run_id") is None:
            given["run_id"] = uuid.uuid4()
        self.config = given
        self.run_id = str(given["run_id"])
        self.key = key
        wanted: list[str] = [stream_mode] if isinstance(stream_mode, str) else list(stream_mode)
        if not wanted:
            raise ValueError("stream_mode: expected a stream mode or a list of them")
        self.listed = not isinstance(stream_mode, str)
        self.wanted = frozenset(wanted)
        self.modes: list[Any] = list(dict.fromkeys([*wanted, "updates", "debug"]))
        self.subgraphs = bool(kwargs.get("subgraphs"))
        self.v2 = kwargs.get("version") == "v2"
        self.tasks: dict[str, _Task] = {}
        self.ranks: Counter[tuple[int, str]] = Counter()
        # Started tasks without a result yet, by node, in start order: a task served
        # from LangGraph's cache streams an update but no result.
        self.pending: defaultdict[str, list[str]] = defaultdict(list)
        self.out: deque[_Out] = deque()

    def feed(self, item: Any) -> list[_Write]:
        """Take one streamed item; the writes to append before :meth:`ready`."""
        ns, mode, data = self._parse(item)
        writes: list[_Write] = []
        waits = False
        if not ns:  # the graph's own tasks; a subgraph's writes reach it through them
            if mode == "debug" and isinstance(data, Mapping):
                writes = self._debug(data)
            elif mode == "updates" and isinstance(data, Mapping):
                if _cached(data):
                    writes = self._cached(data)
                else:  # a task's update: its result (and write) comes next
                    waits = any(self.pending.get(name) for name in data)
        if mode in self.wanted:
            self.out.append(_Out(self._shape(item, ns, mode, data), data if waits else None))
        return writes

    def ready(self, *, everything: bool = False) -> Iterator[Any]:
        """The caller's chunks whose writes are appended, in the order they came."""
        while self.out and (everything or self.out[0].update is None):
            yield self.out.popleft().chunk

    def _debug(self, data: Mapping[str, Any]) -> list[_Write]:
        kind, payload = data.get("type"), data.get("payload")
        if kind == "task" and isinstance(payload, Mapping):
            self._release_all()  # a new step: every task of the last one is done
            self._start(data["step"], payload)
        elif kind == "task_result" and isinstance(payload, Mapping):
            return self._result(payload)
        elif kind == "checkpoint":
            self._release_all()
        return []

    def _start(self, step: int, payload: Mapping[str, Any]) -> None:
        name = payload["name"]
        rank = self.ranks[(step, name)]
        self.ranks[(step, name)] += 1
        self.tasks[payload["id"]] = _Task(step, name, rank)
        self.pending[name].append(payload["id"])

    def _result(self, payload: Mapping[str, Any]) -> list[_Write]:
        task = self.tasks.get(payload["id"])
        if task is None:  # a task of a step before the stream began (a resume)
            return []
        if payload["id"] in self.pending[task.name]:
            self.pending[task.name].remove(payload["id"])
        if payload.get("error") is not None:
            return []  # it streamed no update
        result = payload.get("result")
        result = result if isinstance(result, Mapping) else {}
        self._release(task.name, result)
        value = result.get(self.key, _NONE)
        if value is _NONE:
            return []
        if isinstance(value, Mapping) and isinstance(value.get("$writes"), list):
            values = value["$writes"]  # the task wrote the key more than once
        else:
            values = [value]
        return self._write(task, values)

    def _cached(self, chunk: Mapping[str, Any]) -> list[_Write]:
        found: list[_Write] = []
        for name, update in chunk.items():
            waiting = self.pending.get(name)
            if name == "__metadata__" or not waiting:
                continue
            task = self.tasks[waiting.pop(0)]
            updates = update if isinstance(update, list) else [update]
            values = [u[self.key] for u in updates if isinstance(u, Mapping) and self.key in u]
            found.extend(self._write(task, values))
        return found

    def _write(self, task: _Task, values: list[Any]) -> list[_Write]:
        messages = [m for value in values for m in _delta(value)]
        if not messages:
            return []
        return [_Write(delta_id(self.run_id, task.step, task.name, task.rank), messages)]

    def _release(self, name: str, result: Mapping[str, Any]) -> None:
        """Let the update of the task whose result this is go: the update holding the
        very objects the result holds (two tasks of one node may finish together), else
        the first of that node."""
        held = [o for o in self.out if o.update is not None and name in o.update]
        written = [id(v) for v in result.values()]
        for out in held:
            assert out.update is not None
            if any(id(v) in written for v in _values(out.update[name])):
                out.update = None
                return
        if held:
            held[0].update = None

    def _release_all(self) -> None:
        for out in self.out:
            out.update = None

    def _parse(self, item: Any) -> tuple[tuple[str, ...], str, Any]:
        if self.v2:
            return tuple(item["ns"]), item["type"], item["data"]
        if self.subgraphs:
            ns, mode, data = item
            return tuple(ns), mode, data
        mode, data = item
        return (), mode, data

    def _shape(self, item: Any, ns: tuple[str, ...], mode: str, data: Any) -> Any:
        """The chunk as the caller's own call would have yielded it."""
        if self.v2:
            return item
        if self.listed:
            return (ns, mode, data) if self.subgraphs else (mode, data)
        return (ns, data) if self.subgraphs else data


_NONE: Final = object()


def _values(update: Any) -> Iterator[Any]:
    """The values a node's update wrote (a dict, or a list of them)."""
    for one in update if isinstance(update, list) else [update]:
        if isinstance(one, Mapping):
            yield from one.values()


def _cached(chunk: Mapping[str, Any]) -> bool:
    meta = chunk.get("__metadata__")
    return isinstance(meta, Mapping) and bool(meta.get("cached"))


def _delta(value: Any) -> list[Any]:
    """A write to the messages key as the messages of a delta that does the same to a
    thread: a list is its messages, anything else one message (as ``add_messages``
    reads it), an overwrite a remove-all followed by its messages."""
    if isinstance(value, Overwrite):
        return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *_delta(value.value)]
    if isinstance(value, Mapping):
        if _OVERWRITE in value and len(value) == 1:
            return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *_delta(value[_OVERWRITE])]
        if value.get("type") == _OVERWRITE and "value" in value:
            return [RemoveMessage(id=REMOVE_ALL_MESSAGES), *_delta(value["value"])]
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
