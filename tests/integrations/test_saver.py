"""ThreadfoldSaver's promises beyond LangGraph's suite, over a real Redis and worker:

- a checkpoint lives as long as its thread and no longer: ``delete_thread``, ``prune``
  (``delete``) and the thread's TTL leave no key and no index entry of it (a scan);
  ``keep_latest`` leaves each namespace's latest and the values it names;
- every checkpoint stays readable whatever the log's retention: a DeltaChannel graph's
  history is served once the log it was folded from is trimmed;
- bad input, direct and over HTTP (a precise 4xx): a config without ``thread_id``, an
  unknown checkpoint, another tenant's, a value over the size limit (nothing written),
  a namespace the records cannot hold, a client of the other kind.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from tests.infra.processes import wait_until
from tests.workers.harness import make_settings, start_worker, store_for
from threadfold import AsyncClient, Client, HttpClient, InvalidInput
from threadfold.core.checkpoints import MAX_CHECKPOINT_BYTES
from threadfold.errors import PayloadTooLarge
from threadfold.langgraph import ThreadfoldSaver
from threadfold.workers.redisio.client import text
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import checkpoint_ops as cps


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    turns: Annotated[list[int], operator.add]


def _graph(saver: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    def reply(state: Chat) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AIMessage(f"reply {n}", id=f"ai-{n}")], "turns": [n]}

    builder = StateGraph(Chat)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


def _chat(graph: CompiledStateGraph[Any, Any, Any, Any], thread_id: str, turns: int) -> None:
    for i in range(turns):
        config: RunnableConfig = {"configurable": {"thread_id": thread_id},
                                  "run_id": uuid.uuid4()}
        graph.invoke({"messages": [HumanMessage(f"turn {i}", id=f"h-{i}")]}, config)


def _keys(store: Store, ref: str) -> set[str]:
    """Every key naming the thread, and every bucket index entry naming it."""
    client: Any = store.client
    found = {text(k) for k in client.scan_iter(f"*{ref}*")}
    for key in client.scan_iter("*cpruns*"):
        found |= {f"{text(key)} {text(m)}" for m in client.zrange(key, 0, -1) if ref in text(m)}
    return found


@pytest.fixture
def live(redis_url: str, tmp_path: Path) -> Iterator[Settings]:
    settings = make_settings(redis_url, key_prefix="sv", buckets=4, thread_ttl_seconds=2,
                             retention_seconds=0.001)
    worker = start_worker(settings, "saver", tmp_path)
    try:
        yield settings
    finally:
        worker.kill()


def test_a_removed_thread_leaves_no_checkpoint_behind(live: Settings) -> None:
    store = store_for(live)
    with Client(settings=live) as client:
        graph = _graph(ThreadfoldSaver(client))
        for name in ("deleted", "pruned", "kept", "expired"):
            _chat(graph, name, 3)
        assert all(any(":cp" in k for k in _keys(store, f"_/{name}"))
                   for name in ("deleted", "pruned", "kept", "expired"))
        saver = ThreadfoldSaver(client)
        saver.delete_thread("deleted")
        assert _keys(store, "_/deleted") == set()
        saver.prune(["pruned"], strategy="delete")
        assert not [k for k in _keys(store, "_/pruned") if ":cp" in k]
        saver.prune(["kept"], strategy="keep_latest")
        assert [t.config for t in saver.list({"configurable": {"thread_id": "kept"}})] == [
            graph.get_state({"configurable": {"thread_id": "kept"}}).config]
        assert graph.get_state({"configurable": {"thread_id": "kept"}}).values["turns"] == [
            1, 3, 5]
        # The TTL: idle past it, the sweeper removes the thread and its checkpoints.
        for name in ("kept", "pruned"):
            client.delete(name)
        wait_until(lambda: not _sweep(store, live) and _keys(store, "_/expired") == set(), 15)
    assert {k for k in _keys(store, "_/") if "cp" in k} == set()


def _sweep(store: Store, settings: Settings) -> list[str]:
    swept = store.expire(range(settings.buckets), 1000, settings.thread_ttl_ms)
    return [ref for bucket in swept for ref in bucket.removed]


def test_checkpoints_outlive_the_logs_retention(live: Settings) -> None:
    """The log is trimmed at once (retention 1 ms): a checkpoint's messages are no longer
    in the thread's past, and its history is served by the saver's own records."""
    reference = _graph(InMemorySaver())
    with Client(settings=live) as client:
        graph = _graph(ThreadfoldSaver(client))
        for g in (reference, graph):
            _chat(g, "kept-long", 4)
        config: RunnableConfig = {"configurable": {"thread_id": "kept-long"}}
        fresh = _graph(ThreadfoldSaver(client))  # nothing remembered in process
        want = [(s.values, s.next, s.metadata and s.metadata["step"])
                for s in reference.get_state_history(config)]
        got = [(s.values, s.next, s.metadata and s.metadata["step"])
               for s in fresh.get_state_history(config)]
        assert got == want
        assert fresh.get_state(config).values == reference.get_state(config).values


def test_bad_input_is_refused_and_writes_nothing(live: Settings) -> None:
    with Client(settings=live) as client, Client(settings=live, tenant="other") as other:
        saver = ThreadfoldSaver(client)
        graph = _graph(saver)
        with pytest.raises(ValueError, match="thread_id"):
            saver.get_tuple({"configurable": {}})
        _chat(graph, "mine", 1)
        latest = saver.get_tuple({"configurable": {"thread_id": "mine"}})
        assert latest is not None
        unknown: RunnableConfig = {
            "configurable": {"thread_id": "mine", "checkpoint_id": "no-such-id"}}
        assert saver.get_tuple(unknown) is None
        # Another tenant's saver does not see the thread, nor its checkpoints.
        assert ThreadfoldSaver(other).get_tuple(latest.config) is None
        assert list(ThreadfoldSaver(other).list(latest.config)) == []
        huge = {"messages": [HumanMessage("x" * (MAX_CHECKPOINT_BYTES + 1), id="big")]}
        with pytest.raises(InvalidInput, match="over"):
            graph.invoke(huge, {"configurable": {"thread_id": "mine"}})
        after = saver.get_tuple({"configurable": {"thread_id": "mine"}})
        assert after is not None and after.checkpoint["id"] == latest.checkpoint["id"]
        with pytest.raises(TypeError, match="aget_tuple"):
            asyncio.run(saver.aget_tuple(latest.config))


def test_an_asyncio_client_refuses_the_sync_methods(live: Settings) -> None:
    async def run() -> None:
        async with AsyncClient(settings=live) as client:
            saver = ThreadfoldSaver(client)
            with pytest.raises(TypeError, match="use aget_tuple"):
                saver.get_tuple({"configurable": {"thread_id": "t"}})
            assert await saver.aget_tuple({"configurable": {"thread_id": "t"}}) is None

    asyncio.run(run())


def test_over_http_bad_input_is_a_precise_4xx(stack: Stack) -> None:
    with HttpClient(stack.api_url, TOKEN) as client:
        saver = ThreadfoldSaver(client)
        graph = _graph(saver)
        thread_id = new_thread()
        _chat(graph, thread_id, 1)
        latest = saver.get_tuple({"configurable": {"thread_id": thread_id}})
        assert latest is not None
        # Over the API's limit for a checkpointer's request (32 MiB by default, where
        # other requests have 1 MiB): 413, nothing written.
        big = {"messages": [HumanMessage("x" * 34_000_000, id="big")]}
        with pytest.raises(PayloadTooLarge):
            graph.invoke(big, {"configurable": {"thread_id": thread_id}})
        # A namespace the records cannot hold: 422 naming the field.
        bad: RunnableConfig = {"configurable": {"thread_id": thread_id,
                                                "checkpoint_ns": "a\nb"}}
        with pytest.raises(InvalidInput) as refused:
            saver.put(bad, latest.checkpoint, latest.metadata, {})
        assert refused.value.status == 422 and refused.value.field == "checkpoint_ns"
        # A query string's values are judged by the operation, each naming itself.
        judged_ops: tuple[tuple[cps.CheckpointOp[Any], str], ...] = (
            (cps.CheckpointMessages(thread_id=thread_id, checkpoint_id="c", version="v1"),
             "version"),
            (cps.CheckpointMessages(thread_id=thread_id, checkpoint_id="c", wait=99), "wait"),
            (cps.CopyCheckpoints(thread_id=thread_id, to=thread_id), "to"),
        )
        for asked, field in judged_ops:
            with pytest.raises(InvalidInput) as judged:
                client.checkpoint(asked)
            assert judged.value.field == field and judged.value.status in (400, 422)
        # A thread id that is not one: refused before any request.
        with pytest.raises(InvalidInput, match="thread id"):
            saver.get_tuple({"configurable": {"thread_id": "not/an id"}})
        after = saver.get_tuple({"configurable": {"thread_id": thread_id}})
        assert after is not None and after.checkpoint["id"] == latest.checkpoint["id"]
