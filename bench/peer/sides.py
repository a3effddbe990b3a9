"""The contenders, as a writer process drives them: a thread prefilled, one delta
applied per call, the final state read back in LangChain's flat dict form.

* ``langgraph``, ``langgraph-delta``: LangGraph 1.2.24's ``StateGraph`` over
  ``messages: Annotated[list, add_messages]`` or
  ``Annotated[list, DeltaChannel(_messages_delta_reducer)]``, compiled with
  ``PostgresSaver`` (langgraph-checkpoint-postgres) on the benchmark's own database;
  each delta is one ``graph.update_state(config, {"messages": [delta]})``, as a
  LangGraph backend records a message outside a run. Visible when the call returns
  (the saver commits before it does).
* ``client``, ``http``: threadfold through ``Client.append`` (Redis directly) or
  ``HttpClient.append`` (one ``POST /threads/{id}/deltas``), one call per delta;
  ``client-bulk``: ``Client.append_many`` of :data:`BULK` of the same spread deltas.
  Visible once a worker committed it: the caller gets the version to wait for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, TypedDict

import psycopg
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from psycopg.rows import dict_row

from bench.common.inputs import Dict
from bench.pipeline.workload import ref_of
from threadfold import Client, HttpClient
from threadfold.testing import version_key

Kind = Literal["langgraph", "langgraph-delta", "client", "http", "client-bulk"]
KINDS: tuple[Kind, ...] = ("langgraph", "langgraph-delta", "client", "http", "client-bulk")
#: ``client-bulk``, beside the judged contenders: the same spread deltas, this many a
#: ``Client.append_many`` call (each to a thread of its own), as a backend that gathers
#: its writes does: where one call per delta puts the limit.
BULK = 100
#: Prefilled threads go in appends of this many messages (a delta's size stays modest).
PREFILL_CHUNK = 500


@dataclass(frozen=True)
class Where:
    """What a writer process needs to reach the services (picklable: writers are spawned)."""

    postgres: str
    redis_url: str
    broker_url: str
    api_url: str
    #: The direct client's wake window (the API's is THREADFOLD_WAKE_WINDOW_MS).
    wake_window: float = 0.005


class Side(Protocol):
    def prefill(self, thread: str, messages: Sequence[Dict]) -> None: ...

    def apply(self, thread: str, delta: Dict) -> tuple[str, tuple[int, int]] | None:
        """Apply one delta; the thread's ref and the version to wait for, or None when
        it is visible already."""

    def apply_many(self, items: Sequence[tuple[str, Dict]]) -> list[tuple[str, tuple[int, int]]]:
        """Apply deltas of distinct threads in one call (threadfold's only)."""

    def state(self, thread: str) -> list[dict[str, Any]]: ...

    def close(self) -> None: ...


def open_side(kind: Kind, where: Where) -> Side:
    if kind in ("langgraph", "langgraph-delta"):
        return LangGraphSide(kind == "langgraph-delta", where.postgres)
    return ThreadfoldSide(kind == "http", where)


def _graph(delta: bool, saver: Any) -> Any:
    """The compiled graph: one node that changes nothing (``update_state`` names it)."""
    class Plain(TypedDict):
        messages: Annotated[list[Any], add_messages]

    class Delta(TypedDict):
        messages: Annotated[list[Any], DeltaChannel(_messages_delta_reducer)]

    builder: Any = StateGraph(Delta if delta else Plain)
    builder.add_node("agent", lambda _state: {})
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


class LangGraphSide:
    """One connection (autocommit, as ``PostgresSaver.from_conn_string`` opens it)."""

    def __init__(self, delta: bool, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True, prepare_threshold=0,
                                    row_factory=dict_row)
        self.graph = _graph(delta, PostgresSaver(self.conn))

    @staticmethod
    def _config(thread: str) -> Any:
        return {"configurable": {"thread_id": thread}}

    def prefill(self, thread: str, messages: Sequence[Dict]) -> None:
        self.graph.update_state(self._config(thread), {"messages": list(messages)},
                                as_node="agent")

    def apply(self, thread: str, delta: Dict) -> None:
        self.graph.update_state(self._config(thread), {"messages": [delta]}, as_node="agent")

    def apply_many(self, items: Sequence[tuple[str, Dict]]) -> list[tuple[str, tuple[int, int]]]:
        raise NotImplementedError("LangGraph applies one update_state per delta")

    def state(self, thread: str) -> list[dict[str, Any]]:
        values = self.graph.get_state(self._config(thread)).values
        return [m.model_dump() for m in values.get("messages", [])]

    def close(self) -> None:
        self.conn.close()


class ThreadfoldSide:
    """``Client`` (its default waker: wake-ups gathered for 5 ms) or ``HttpClient``."""

    def __init__(self, http: bool, where: Where) -> None:
        self.direct = Client(where.redis_url, where.broker_url, wake_window=where.wake_window)
        self.writer: Any = HttpClient(where.api_url) if http else self.direct

    def prefill(self, thread: str, messages: Sequence[Dict]) -> None:
        for at in range(0, len(messages), PREFILL_CHUNK):
            self.direct.append(thread, list(messages[at : at + PREFILL_CHUNK]))

    def apply(self, thread: str, delta: Dict) -> tuple[str, tuple[int, int]]:
        appended = self.writer.append(thread, [delta])
        return ref_of(thread), version_key(appended.version)

    def apply_many(self, items: Sequence[tuple[str, Dict]]) -> list[tuple[str, tuple[int, int]]]:
        appended = self.direct.append_many([(thread, [delta]) for thread, delta in items])
        return [(ref_of(a.thread_id), version_key(a.version)) for a in appended]

    def state(self, thread: str) -> list[dict[str, Any]]:
        return list(self.direct.state(thread).messages)

    def close(self) -> None:
        if self.writer is not self.direct:
            self.writer.close()
        self.direct.close()
