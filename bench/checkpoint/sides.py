"""The checkpoint benchmark's contenders, graphs and meters.

Savers: ``PostgresSaver`` on one autocommit connection of its own, and
``threadfold.langgraph.ThreadfoldSaver`` over a direct ``Client`` or an ``HttpClient``.
A :class:`Side` reads a thread's history with the saver's own
``get_delta_channel_history`` or, ``walk`` set, with ``BaseCheckpointSaver``'s, called
unbound on the saver (the default walk: one ``get_tuple`` per ancestor).

Meters: the client's round trips are counted in this process, Redis's
``send_packed_command`` (a pipeline is one), httpx's ``handle_request`` and the
Postgres cursor's ``execute`` each counting one while :func:`counting` is on. CPU is
the scheduler's nanoseconds (:func:`on_cpu`): of the Postgres backend serving the
saver's connection (not the server's background processes, nor other users'), or of
every process of the threadfold stack (both Redis, workers, beat, API: what they do
idle is counted too). Bytes, "in" to the server and "out" of it: Redis's ``INFO stats``
net input and output (less what the ``INFO`` calls themselves add; every client of the
state Redis counts), the Postgres connection's socket (Linux's ``tcp_info``).
"""

from __future__ import annotations

import os
import random
import socket
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, TypedDict

import httpx
import langgraph.pregel._checkpoint as pregel_checkpoint
import psutil
import psycopg
import redis
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from psycopg.rows import dict_row

from bench.common.inputs import text
from bench.common.stack import Stack
from threadfold import Client, HttpClient
from threadfold.langgraph import ThreadfoldSaver

#: DeltaChannel's snapshot cadence for the depth graph: never, within the run.
NEVER: Final = 10**9
# LangGraph snapshots a DeltaChannel after this many supersteps whatever its cadence
# (default 5,000, read from LANGGRAPH_DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT at import).
pregel_checkpoint.DELTA_MAX_SUPERSTEPS_SINCE_SNAPSHOT = NEVER  # type: ignore[attr-defined]
#: LangGraph's reducer of a messages DeltaChannel (typed loosely: DeltaChannel's is).
REDUCER: Any = _messages_delta_reducer
#: Where ``tcpi_bytes_acked`` (then ``tcpi_bytes_received``) sits in Linux's tcp_info.
_TCP_BYTES_ACKED: Final = 120
#: Tool calls the agent's model makes a turn before it answers.
CALLS: Final = 3


class _Trips:
    on = False
    count = 0


def _counted(method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _Trips.on:
            _Trips.count += 1
        return method(*args, **kwargs)

    return wrapper


redis.connection.AbstractConnection.send_packed_command = _counted(  # type: ignore[method-assign]
    redis.connection.AbstractConnection.send_packed_command)
httpx.HTTPTransport.handle_request = _counted(  # type: ignore[method-assign]
    httpx.HTTPTransport.handle_request)


class _CountingCursor(psycopg.Cursor[Any]):
    def execute(self, *args: Any, **kwargs: Any) -> Any:
        if _Trips.on:
            _Trips.count += 1
        return super().execute(*args, **kwargs)


@dataclass(frozen=True)
class Cost:
    """Counters of the server side at one moment (differences are what is reported)."""

    cpu: float = 0.0
    commands: int = 0
    bytes_in: int = 0
    bytes_out: int = 0

    def minus(self, other: Cost) -> Cost:
        return Cost(self.cpu - other.cpu, self.commands - other.commands,
                    self.bytes_in - other.bytes_in, self.bytes_out - other.bytes_out)


@contextmanager
def counting(found: list[int]) -> Iterator[None]:
    """The client's round trips meanwhile, appended to ``found``."""
    _Trips.on, before = True, _Trips.count
    try:
        yield
    finally:
        _Trips.on = False
        found.append(_Trips.count - before)


def on_cpu(pids: Sequence[int]) -> float:
    """CPU seconds of these processes' live threads, to the nanosecond (the scheduler's
    ``/proc/<pid>/task/<tid>/schedstat``; psutil's ``cpu_times`` counts 10 ms ticks)."""
    total = 0
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            with suppress(OSError):
                total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def _tcp_bytes(fd: int) -> tuple[int, int]:
    """Bytes a TCP socket sent (acknowledged) and received, from Linux's ``tcp_info``."""
    info = socket.socket(fileno=os.dup(fd))
    try:
        raw = info.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    finally:
        info.close()
    acked, received = struct.unpack_from("QQ", raw, _TCP_BYTES_ACKED)
    return acked, received


class PostgresMeter:
    """The connection's backend (its CPU) and socket (its bytes)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn, self.backend = conn, [conn.info.backend_pid]

    def cpu(self) -> float:
        return on_cpu(self.backend)

    def cost(self) -> Cost:
        sent, received = _tcp_bytes(self.conn.pgconn.socket)
        return Cost(self.cpu(), 0, sent, received)


class StackMeter:
    """Every process of the threadfold stack (CPU); the state Redis's counters."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        roots = [stack.state_pid, stack.broker_pid, stack.beat.pid,
                 *(w.pid for w in stack.workers), *(a.process.pid for a in stack.apis.values())]
        self.pids = [p.pid for root in roots for p in
                     [psutil.Process(root), *psutil.Process(root).children(recursive=True)]]
        self.info_bytes = (0, 0)
        self.info_bytes = self._info_bytes()

    def cpu(self) -> float:
        return on_cpu(self.pids)

    def _info(self) -> tuple[int, int, int]:
        info: dict[str, Any] = self.stack.client.info("stats", "commandstats")
        calls = sum(int(v["calls"]) for k, v in info.items()
                    if k.startswith("cmdstat_") and k != "cmdstat_info")
        return calls, int(info["total_net_input_bytes"]), int(info["total_net_output_bytes"])

    def _info_bytes(self) -> tuple[int, int]:
        """What one INFO call adds to the byte counters (its request and reply)."""
        first, second = self._info(), self._info()
        return second[1] - first[1], second[2] - first[2]

    def cost(self) -> Cost:
        calls, sent, received = self._info()
        return Cost(self.cpu(), calls, sent - self.info_bytes[0], received - self.info_bytes[1])


Meter = PostgresMeter | StackMeter


@dataclass
class Side:
    """One contender: a saver, how it reads history, and what its servers cost."""

    name: str
    saver: BaseCheckpointSaver[Any]
    meter: Meter
    walk: bool = False
    close: Callable[[], None] = lambda: None

    def history(self, config: Any, channels: Sequence[str]) -> Mapping[str, Any]:
        if self.walk:
            return BaseCheckpointSaver.get_delta_channel_history(
                self.saver, config=config, channels=channels)
        return self.saver.get_delta_channel_history(config=config, channels=channels)

    def load(self, thread: str) -> tuple[Any, Mapping[str, Any]]:
        """What a graph's load does (``pregel._loop`` and ``channels_from_checkpoint``):
        the latest checkpoint, then the messages channel's history at it, unless the
        checkpoint holds the channel's value (a snapshot: no history is read then)."""
        base: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        saved = self.saver.get_tuple(base)
        assert saved is not None, f"no checkpoint for {thread}"
        if "messages" in saved.checkpoint["channel_values"]:
            return saved, {}
        config = {**base, "configurable": {**base["configurable"], **saved.config["configurable"]}}
        return saved, self.history(config, ["messages"])


def postgres_side(dsn: str) -> Side:
    conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    conn.cursor_factory = _CountingCursor
    return Side("postgres", PostgresSaver(conn), PostgresMeter(conn), close=conn.close)


def threadfold_side(name: str, stack: Stack, *, http: bool = False, walk: bool = False) -> Side:
    """``ThreadfoldSaver`` over a ``Client`` (or an ``HttpClient``) of the stack."""
    settings = stack.settings
    broker = settings.broker_url.get_secret_value() if settings.broker_url else None
    client: Any = (HttpClient(next(iter(stack.apis.values())).url) if http
                   else Client(settings.redis_url.get_secret_value(), broker))
    return Side(name, ThreadfoldSaver(client, messages_key="messages"), StackMeter(stack), walk,
                client.close)


# -- graphs ------------------------------------------------------------------------------


class _Deep(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(REDUCER, snapshot_frequency=NEVER)]


class _Added(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class _Delta(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(REDUCER)]


def depth_graph(saver: BaseCheckpointSaver[Any], steps: int) -> Any:
    """One node looping ``steps`` supersteps, appending one AI message each, over a
    DeltaChannel that never snapshots (the walk walks)."""

    def step(state: Mapping[str, Any]) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(content=text(random.Random(n), 200), id=f"m{n}")]}

    builder: Any = StateGraph(_Deep)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges(
        "step", lambda state: "step" if len(state["messages"]) <= steps else END)
    return builder.compile(checkpointer=saver)


def depth_expected(steps: int) -> list[AnyMessage]:
    """The depth graph's messages after ``steps`` supersteps."""
    first: list[AnyMessage] = [HumanMessage(content="go", id="m0")]
    return first + [AIMessage(content=text(random.Random(n), 200), id=f"m{n}")
                    for n in range(1, steps + 1)]


def _tools_this_turn(messages: Sequence[AnyMessage]) -> int:
    count = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        count += isinstance(message, ToolMessage)
    return count


def agent_graph(saver: BaseCheckpointSaver[Any], delta: bool) -> Any:
    """model -> tool -> model ...: a deterministic model making :data:`CALLS` tool calls
    a turn, then answering; messages over ``add_messages`` or a DeltaChannel (its
    default snapshot cadence)."""
    def model(state: Mapping[str, Any]) -> dict[str, Any]:
        n = len(state["messages"])
        if _tools_this_turn(state["messages"]) < CALLS:
            call = {"name": "lookup", "args": {"n": n}, "id": f"call-{n}", "type": "tool_call"}
            return {"messages": [AIMessage(content="", tool_calls=[call], id=f"ai-{n}")]}
        return {"messages": [AIMessage(content=text(random.Random(n), 200), id=f"ai-{n}")]}

    def tool(state: Mapping[str, Any]) -> dict[str, Any]:
        n, last = len(state["messages"]), state["messages"][-1]
        assert isinstance(last, AIMessage) and last.tool_calls
        return {"messages": [ToolMessage(content=text(random.Random(n), 400), id=f"tool-{n}",
                                         tool_call_id=last.tool_calls[0]["id"])]}

    def route(state: Mapping[str, Any]) -> str:
        last = state["messages"][-1]
        return "tool" if isinstance(last, AIMessage) and last.tool_calls else END

    builder: Any = StateGraph(_Delta if delta else _Added)
    builder.add_node("model", model)
    builder.add_node("tool", tool)
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", route)
    builder.add_edge("tool", "model")
    return builder.compile(checkpointer=saver)
