"""threadfold.langgraph.ThreadfoldMessages with real compiled LangGraph graphs (fake
models) against the real stack: each node's message write appended as the node
finishes, under a delta_id of run, step and node; two agents at once on one thread;
a retried run applied once; ids the graph and the thread agree on; removals,
remove-all and overwrites; a node served from LangGraph's cache; the chunks the caller
gets are the ones graph.stream gives."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.cache.memory import InMemoryCache
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import CachePolicy, Overwrite, Send

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from tests.integrations.recording import AsyncRecording, Recorder, Recording
from threadfold import (
    Appended,
    AsyncClient,
    AsyncHttpClient,
    Client,
    ClientProtocol,
    HttpClient,
    Unavailable,
)
from threadfold.langgraph import MAX_DELTA_ID, ThreadfoldMessages, delta_id
from threadfold.workers.ingest.producer import MAX_DELTA_ID as SERVICE_MAX_DELTA_ID

WAIT = 20.0
SYNC = ["Client", "HttpClient"]
ASYNC = ["AsyncClient", "AsyncHttpClient"]

Graph = CompiledStateGraph[Any, Any, Any, Any]


def sync_client(kind: str, stack: Stack) -> ClientProtocol:
    if kind == "Client":
        return Client(settings=stack.settings)
    return HttpClient(stack.api_url, TOKEN)


def async_client(kind: str, stack: Stack) -> AsyncClient | AsyncHttpClient:
    if kind == "AsyncClient":
        return AsyncClient(settings=stack.settings)
    return AsyncHttpClient(stack.api_url, TOKEN)


def dumped(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    assert all(isinstance(m, BaseMessage) for m in messages)
    return [m.model_dump() for m in messages]


def script(a: int, b: int) -> Iterator[AIMessage]:
    """A fake model's turns: a tool call, then the answer (new objects each time: the
    model stamps its run's id on the very object it returns)."""
    return iter(
        [
            AIMessage("", tool_calls=[{"name": "mul", "args": {"a": a, "b": b}, "id": f"c{a}"}]),
            AIMessage(f"{a} x {b} = {a * b}"),
        ]
    )


def agent_graph(a: int, b: int) -> Graph:
    """A tool-calling agent: agent -> tools -> agent -> end, on MessagesState."""
    model = GenericFakeChatModel(messages=script(a, b))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def tools(state: MessagesState) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls  # type: ignore[union-attr]
        return {
            "messages": [
                ToolMessage(str(c["args"]["a"] * c["args"]["b"]), tool_call_id=c["id"])
                for c in calls
            ]
        }

    def route(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile()


def run(tm: ThreadfoldMessages, graph: Graph, input: Any, run_id: uuid.UUID) -> Any:
    """Run the graph through tm.stream; the graph's final state."""
    values = None
    for mode, chunk in tm.stream(graph, input, {"run_id": run_id}, stream_mode=["values"]):
        assert mode == "values"
        values = chunk
    return values


@pytest.mark.parametrize("kind", SYNC)
def test_each_message_write_reaches_the_thread_as_its_node_finishes(
    kind: str, stack: Stack
) -> None:
    recorder, thread, run_id = Recorder(), new_thread(), uuid.uuid4()
    with Recording(sync_client(kind, stack), recorder) as client:
        tm = ThreadfoldMessages(client, thread, wait=WAIT)
        tm.append([HumanMessage("what is 6 x 7?")], delta_id="turn-1")
        graph, nodes, values = agent_graph(6, 7), list[str](), None
        updates = tm.stream(
            graph, {"messages": tm.load()}, {"run_id": run_id}, stream_mode=["updates", "values"]
        )
        for mode, chunk in updates:
            if mode == "updates":
                [node] = chunk
                nodes.append(node)
                # appended before the caller saw the update: step n is the n-th node
                assert recorder.delta_ids[-1] == f"{run_id}:{len(nodes)}:{node}"
            else:
                values = chunk
        assert nodes == ["agent", "tools", "agent"]
        thread_now = tm.load()  # waits for its own appends
        assert [type(m) for m in thread_now] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
        assert dumped(thread_now) == recorder.expected(thread)
        assert values is not None and dumped(values["messages"]) == dumped(thread_now)


@pytest.mark.parametrize("kind", ASYNC)
def test_an_asyncio_graph_over_an_asyncio_client(kind: str, stack: Stack) -> None:
    async def main() -> None:
        recorder, thread, run_id = Recorder(), new_thread(), uuid.uuid4()
        async with AsyncRecording(async_client(kind, stack), recorder) as client:
            tm = ThreadfoldMessages(client, thread, wait=WAIT)
            await tm.aappend([HumanMessage("what is 6 x 7?")])
            nodes = [
                node
                async for chunk in tm.astream(
                    agent_graph(6, 7), {"messages": await tm.aload()}, {"run_id": run_id}
                )
                for node in chunk
            ]
            assert nodes == ["agent", "tools", "agent"]
            assert recorder.delta_ids[1:] == [
                f"{run_id}:1:agent", f"{run_id}:2:tools", f"{run_id}:3:agent",
            ]  # fmt: skip
            assert dumped(await tm.aload()) == recorder.expected(thread)
            with pytest.raises(TypeError, match=r"^stream: .* is an asyncio client"):
                next(iter(tm.stream(agent_graph(1, 1), {"messages": []})))

    asyncio.run(main())


def test_two_agents_at_once_on_one_thread_converge_to_the_fold(stack: Stack) -> None:
    """Two graphs (agents) run at once on one thread, each through its own client (one
    direct, one HTTP), from their own OS threads: every write of both is in the thread,
    which is the one-at-a-time fold of the log."""
    recorder, thread = Recorder(), new_thread()
    with (
        Recording(Client(settings=stack.settings), recorder) as direct,
        Recording(HttpClient(stack.api_url, TOKEN), recorder) as http,
    ):
        ThreadfoldMessages(direct, thread).append([HumanMessage("multiply, both of you")])
        start = threading.Barrier(2)

        def agent(client: ClientProtocol, a: int) -> Any:
            tm = ThreadfoldMessages(client, thread, wait=WAIT)
            graph_input = {"messages": tm.load()}
            start.wait()  # both run at once
            return run(tm, agent_graph(a, 7), graph_input, uuid.uuid4())

        with ThreadPoolExecutor(2) as pool:
            finals = list(pool.map(agent, [direct, http], [6, 8]))
        direct.wait_for(thread, recorder.last_version(thread), WAIT)
        got = dumped(ThreadfoldMessages(direct, thread).load())
        assert got == recorder.expected(thread)
        assert len(recorder.delta_ids) == 1 + 3 + 3 and len(got) == 7
        for final in finals:  # each agent's own messages are in the thread, as it has them
            assert all(m in got for m in dumped(final["messages"]))


def test_two_asyncio_agents_at_once_on_one_thread(stack: Stack) -> None:
    async def main() -> None:
        recorder, thread = Recorder(), new_thread()
        async with (
            AsyncRecording(AsyncClient(settings=stack.settings), recorder) as direct,
            AsyncRecording(AsyncHttpClient(stack.api_url, TOKEN), recorder) as http,
        ):
            await ThreadfoldMessages(direct, thread).aappend([HumanMessage("multiply")])

            async def agent(client: Any, a: int) -> None:
                tm = ThreadfoldMessages(client, thread, wait=WAIT)
                graph_input = {"messages": await tm.aload()}
                async for _ in tm.astream(agent_graph(a, 7), graph_input):
                    pass

            await asyncio.gather(agent(direct, 6), agent(http, 8))
            await direct.wait_for(thread, recorder.last_version(thread), WAIT)
            got = dumped(await ThreadfoldMessages(direct, thread).aload())
            assert got == recorder.expected(thread) and len(got) == 7

    asyncio.run(main())


def contents(messages: Sequence[BaseMessage]) -> list[tuple[str, Any]]:
    return [(m.type, m.content) for m in messages]


@pytest.mark.parametrize("kind", SYNC)
def test_a_retried_run_is_applied_once(kind: str, stack: Stack) -> None:
    """The same run again (same run_id, same input): every write is answered as a
    duplicate and the thread is unchanged, version included."""
    recorder, thread, run_id = Recorder(), new_thread(), uuid.uuid4()
    with Recording(sync_client(kind, stack), recorder) as client:
        tm = ThreadfoldMessages(client, thread, wait=WAIT)
        tm.append([HumanMessage("what is 6 x 7?")])
        loaded = tm.load()
        first = run(tm, agent_graph(6, 7), {"messages": loaded}, run_id)
        before = client.state(thread, min_version=tm.version, wait=WAIT)
        assert dumped(first["messages"]) == before.messages
        again = [m.model_copy() for m in loaded]
        retried = run(tm, agent_graph(6, 7), {"messages": again}, run_id)
        assert len(recorder.duplicates) == 3 and len(recorder.delta_ids) == 4
        assert client.state(thread) == before
        # The same conversation; the model's answers carry its new run's ids in the
        # retried graph (the thread keeps the first attempt's: docs/integrations.md).
        assert contents(retried["messages"]) == contents(tm.load())


class Failing(Recording):
    """A client whose appends fail, as an unreachable Redis or API does, after ``ok``."""

    def __init__(self, inner: ClientProtocol, recorder: Recorder, ok: int) -> None:
        super().__init__(inner, recorder)
        self.ok = ok

    def append(
        self,
        thread_id: str,
        messages: Sequence[Any],
        *,
        delta_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Appended:
        if self.ok == 0:
            raise Unavailable("injected: thread state is unreachable")
        self.ok -= 1
        return super().append(thread_id, messages, delta_id=delta_id)


def test_a_run_stopped_by_a_failed_append_and_run_again_ends_with_each_write_once(
    stack: Stack,
) -> None:
    recorder, thread, run_id = Recorder(), new_thread(), uuid.uuid4()
    with Recording(Client(settings=stack.settings), recorder) as client:
        tm = ThreadfoldMessages(client, thread, wait=WAIT)
        tm.append([HumanMessage("what is 6 x 7?")])
        graph_input = tm.load()
        failing = ThreadfoldMessages(Failing(client.inner, recorder, ok=1), thread, wait=WAIT)
        seen = []
        with pytest.raises(Unavailable, match="injected"):
            for chunk in failing.stream(
                agent_graph(6, 7), {"messages": graph_input}, {"run_id": run_id}
            ):
                seen.extend(chunk)
        assert seen == ["agent"]  # the tools' update never reached the caller
        again = [m.model_copy() for m in graph_input]
        run(tm, agent_graph(6, 7), {"messages": again}, run_id)
        assert len(recorder.duplicates) == 1  # the agent's first write, from the first run
        assert recorder.delta_ids[1:] == [
            f"{run_id}:1:agent", f"{run_id}:2:tools", f"{run_id}:3:agent",
        ]  # fmt: skip
        got = dumped(tm.load())
        assert got == recorder.expected(thread)
        assert [m["type"] for m in got] == ["human", "ai", "tool", "ai"]


def by_id(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(messages, key=lambda m: str(m["id"]))


def fan_out_graph() -> Graph:
    """plan -> two `worker` tasks (Send) and `audit`, in one step; id-less answers."""

    def plan(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("two jobs", id="plan")]}

    def jobs(state: MessagesState) -> list[Send]:
        return [Send("worker", {"messages": [HumanMessage(f"job {i}")]}) for i in range(2)]

    def worker(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"done: {state['messages'][-1].content}")]}

    def audit(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("audited")]}

    builder = StateGraph(MessagesState)
    builder.add_node("plan", plan)
    builder.add_node("worker", worker)
    builder.add_node("audit", audit)
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", jobs, ["worker"])
    builder.add_edge("plan", "audit")
    return builder.compile()


def test_tasks_of_one_step_get_delta_ids_apart_and_the_graph_takes_the_threads_ids(
    stack: Stack,
) -> None:
    """Two tasks of one node in one step (a Send fan-out) and a third node beside them:
    three delta_ids; their id-less messages carry, in the graph's state, the ids the
    thread stamped (LangGraph's reducer would have stamped other, random ones), the same
    on a retry of the run. (The thread has a step's writes in the order its tasks
    finished; LangGraph applies them in the order of its tasks.)"""
    recorder, thread, run_id = Recorder(), new_thread(), uuid.uuid4()
    with Recording(Client(settings=stack.settings), recorder) as client:
        tm = ThreadfoldMessages(client, thread, wait=WAIT)
        final = run(tm, fan_out_graph(), {"messages": []}, run_id)
        assert sorted(str(d) for d in recorder.delta_ids) == sorted(
            [
                f"{run_id}:1:plan",
                f"{run_id}:2:worker",
                f"{run_id}:2:worker:1",
                f"{run_id}:2:audit",
            ]
        )
        got = dumped(tm.load())
        assert got == recorder.expected(thread)
        assert by_id(dumped(final["messages"])) == by_id(got)
        retried = run(tm, fan_out_graph(), {"messages": []}, run_id)
        assert len(recorder.duplicates) == 4 and dumped(tm.load()) == got
        assert by_id(dumped(retried["messages"])) == by_id(got)


def test_removals_remove_all_and_overwrites_are_forwarded(stack: Stack) -> None:
    def drop_first(state: MessagesState) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=str(state["messages"][0].id))]}

    def restart(state: MessagesState) -> dict[str, Any]:
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), AIMessage("fresh", id="f")]}

    def grow(state: MessagesState) -> dict[str, Any]:
        return {"messages": [HumanMessage("more"), ("ai", "a pair")]}

    def summarise(state: MessagesState) -> dict[str, Any]:
        return {"messages": Overwrite([AIMessage("summary", id="s"), AIMessage("tail")])}

    builder = StateGraph(MessagesState)
    order = [("drop_first", drop_first), ("restart", restart), ("grow", grow)]
    order.append(("summarise", summarise))
    previous = START
    for name, node in order:
        builder.add_node(name, node)
        builder.add_edge(previous, name)
        previous = name
    recorder, thread = Recorder(), new_thread()
    with Recording(Client(settings=stack.settings), recorder) as client:
        tm = ThreadfoldMessages(client, thread, wait=WAIT)
        tm.append([HumanMessage("one", id="1"), HumanMessage("two", id="2")])
        graph_input = {"messages": tm.load()}
        steps: list[AnyMessage] = []
        for chunk in tm.stream(builder.compile(), graph_input):
            steps.append(chunk)
            [node] = chunk
            if node == "grow":  # in the middle: the thread is where the graph is
                assert [m.content for m in tm.load()] == ["fresh", "more", "a pair"]
        got = dumped(tm.load())
        assert got == recorder.expected(thread)
        assert [(m["id"], m["content"]) for m in got][:1] == [("s", "summary")]
        assert [m["content"] for m in got] == ["summary", "tail"]
        assert len(steps) == 4


def test_a_node_served_from_langgraphs_cache_is_forwarded(stack: Stack) -> None:
    """A cached node is not run again: LangGraph streams its update but no task result.
    Its write still goes into the graph's state, so into the thread too."""
    calls = []

    def answer(state: MessagesState) -> dict[str, Any]:
        calls.append(1)
        return {"messages": [AIMessage("cached answer", id="cached")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer, cache_policy=CachePolicy())
    builder.add_edge(START, "answer")
    graph = builder.compile(cache=InMemoryCache())
    recorder = Recorder()
    with Recording(Client(settings=stack.settings), recorder) as client:
        threads = [new_thread(), new_thread()]
        for thread in threads:
            tm = ThreadfoldMessages(client, thread, wait=WAIT)
            list(tm.stream(graph, {"messages": [HumanMessage("same question", id="q")]}))
            assert [m.content for m in tm.load()] == ["cached answer"]
        assert len(calls) == 1  # the second run was served from the cache


def plain_graph() -> Graph:
    """Fixed ids and contents, so that two runs stream equal chunks."""

    def greet(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("hello", id="g")]}

    inner = StateGraph(MessagesState)
    inner.add_node("greet", greet)
    inner.add_edge(START, "greet")
    builder = StateGraph(MessagesState)
    builder.add_node("sub", inner.compile())
    builder.add_node("bye", lambda state: {"messages": [AIMessage("bye", id="b")]})
    builder.add_edge(START, "sub")
    builder.add_edge("sub", "bye")
    return builder.compile()


def normalized(chunks: list[Any]) -> list[Any]:
    """The chunks with the task ids taken out of their namespaces (new each run)."""

    def ns(names: Sequence[str]) -> tuple[str, ...]:
        return tuple(name.split(":")[0] for name in names)

    out: list[Any] = []
    for chunk in chunks:
        if isinstance(chunk, dict) and "ns" in chunk:  # version="v2"
            out.append({**chunk, "ns": ns(chunk["ns"])})
        elif isinstance(chunk, tuple) and isinstance(chunk[0], tuple):  # subgraphs=True
            out.append((ns(chunk[0]), *chunk[1:]))
        else:
            out.append(chunk)
    return out


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"stream_mode": "values"},
        {"stream_mode": ["updates", "values"]},
        {"stream_mode": "updates", "subgraphs": True},
        {"stream_mode": ["values", "updates"], "subgraphs": True},
        {"stream_mode": ["updates", "values"], "version": "v2"},
    ],
)
def test_the_caller_gets_the_chunks_graph_stream_gives(
    options: dict[str, Any], stack: Stack
) -> None:
    graph = plain_graph()
    graph_input = {"messages": [HumanMessage("hi", id="h")]}
    mode = options.pop("stream_mode", "updates")
    expected = list(graph.stream(graph_input, stream_mode=mode, **options))
    with Client(settings=stack.settings) as client:
        tm = ThreadfoldMessages(client, new_thread(), wait=WAIT)
        got = list(tm.stream(graph, graph_input, stream_mode=mode, **options))
        assert normalized(got) == normalized(expected)
        # the subgraph's write reaches the thread once, through its parent node, whose
        # update is the subgraph's whole state: the input's message too
        assert [m.content for m in tm.load()] == ["hi", "hello", "bye"]


def test_a_delta_id_stays_within_what_the_service_takes() -> None:
    assert MAX_DELTA_ID == SERVICE_MAX_DELTA_ID
    run_id = str(uuid.uuid4())
    assert delta_id(run_id, 3, "agent") == f"{run_id}:3:agent"
    assert delta_id(run_id, 3, "agent", 2) == f"{run_id}:3:agent:2"
    long = delta_id(run_id, 3, "n" * 500, 1)
    assert len(long) <= MAX_DELTA_ID and long.endswith(":1")
    assert long != delta_id(run_id, 3, "n" * 499 + "m", 1)
