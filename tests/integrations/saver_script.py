"""A plan's script run through a checkpoint saver, sync or asyncio, and the shapes two
runs are compared by: what ``get_state`` and ``get_state_history`` give, with what
necessarily differs between savers (checkpoint ids, times) taken out, the parent links
kept as positions in the history."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, PregelTask, StateSnapshot

from tests.integrations.saver_graphs import Nodes, Plan, build
from threadfold.langgraph import ThreadfoldSaver

Graph = CompiledStateGraph[Any, Any, Any, Any]
#: Called after each step of a script (the live thread's check).
Check = Callable[[], None]

def saver_under_test(client: Any) -> BaseCheckpointSaver[Any]:
    """The saver the tests hold against LangGraph's in-memory one."""
    return ThreadfoldSaver(client)


def compiled(plan: Plan, saver: BaseCheckpointSaver[Any], nodes: Nodes | None = None) -> Graph:
    return build(nodes or Nodes(plan)).compile(checkpointer=saver)


def config_of(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


def turn_input(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"turn {turn}", id=f"human-{turn}")], "log": [f"turn-{turn}"]}


class Driver(Protocol):
    """A compiled graph driven through its sync or its asyncio methods."""

    def invoke(self, graph_input: Any, config: RunnableConfig) -> Any: ...
    def state(self, config: RunnableConfig) -> StateSnapshot: ...
    def history(self, config: RunnableConfig) -> list[StateSnapshot]: ...
    def update(self, config: RunnableConfig, values: Any, as_node: str) -> RunnableConfig: ...


@dataclass
class SyncDriver:
    graph: Graph

    def invoke(self, graph_input: Any, config: RunnableConfig) -> Any:
        return self.graph.invoke(graph_input, config)

    def state(self, config: RunnableConfig) -> StateSnapshot:
        return self.graph.get_state(config)

    def history(self, config: RunnableConfig) -> list[StateSnapshot]:
        return list(self.graph.get_state_history(config))

    def update(self, config: RunnableConfig, values: Any, as_node: str) -> RunnableConfig:
        return self.graph.update_state(config, values, as_node=as_node)


@dataclass
class AsyncDriver:
    """The asyncio methods (so the saver's ``aget_tuple``, ``alist``, ``aput``...), each
    call run to its end on ``runner``'s loop, the one the saver's client belongs to."""

    graph: Graph
    runner: asyncio.Runner

    def invoke(self, graph_input: Any, config: RunnableConfig) -> Any:
        return self.runner.run(self.graph.ainvoke(graph_input, config))

    def state(self, config: RunnableConfig) -> StateSnapshot:
        return self.runner.run(self.graph.aget_state(config))

    def history(self, config: RunnableConfig) -> list[StateSnapshot]:
        return self.runner.run(listed(self.graph.aget_state_history(config)))

    def update(self, config: RunnableConfig, values: Any, as_node: str) -> RunnableConfig:
        return self.runner.run(self.graph.aupdate_state(config, values, as_node=as_node))


async def listed(snapshots: AsyncIterator[StateSnapshot]) -> list[StateSnapshot]:
    return [snapshot async for snapshot in snapshots]


def resume_all(
    driver: Driver, config: RunnableConfig, answers: Iterator[int], check: Check
) -> None:
    """Resume the thread while it stops at an interrupt, each time with a new answer."""
    for _ in range(10):  # a graph has one review stage, run at most once a turn
        if not driver.state(config).interrupts:
            return
        driver.invoke(Command(resume=f"ok-{next(answers)}"), config)
        check()
    raise AssertionError("still interrupted after 10 resumes")


def fork_update(plan: Plan, older: StateSnapshot) -> dict[str, Any]:
    """The values a fork writes at ``older``: a message, and maybe an edit and a removal
    of the messages there."""
    writes: list[Any] = [HumanMessage("fork", id="fork")]
    there = older.values.get("messages", [])
    if plan.fork_edits and len(there) >= 2:
        first, last = there[0], there[-1]
        writes = [RemoveMessage(id=str(first.id)), last.model_copy(update={"content": "forked"})]
        writes.append(HumanMessage("fork", id="fork"))
    return {"messages": writes, "log": ["fork"]}


def run_script(driver: Driver, plan: Plan, thread_id: str, check: Check = lambda: None) -> None:
    """The plan's turns (each resumed to its end), then maybe a fork: the state updated
    at an older checkpoint of the history, and the graph run on from there. ``check``
    is called after each run and update."""
    config, answers = config_of(thread_id), itertools.count()
    for turn in range(plan.turns):
        driver.invoke(turn_input(turn), config)
        check()
        resume_all(driver, config, answers, check)
    if plan.fork_back is None:
        return
    history = driver.history(config)
    older = history[min(plan.fork_back, len(history) - 1)]
    forked = driver.update(older.config, fork_update(plan, older), plan.fork_as)
    check()
    driver.invoke(None, forked)
    check()
    resume_all(driver, config, answers, check)


def plain(value: Any) -> Any:
    """``value`` with LangChain messages as their dumps (all their fields), recursively."""
    if isinstance(value, BaseMessage):
        return value.model_dump()
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def task_shape(task: PregelTask) -> dict[str, Any]:
    return {
        "name": task.name,
        "error": repr(task.error) if task.error is not None else None,
        "interrupts": [i.value for i in task.interrupts],
        "result": plain(task.result),
    }


def shape(snapshot: StateSnapshot) -> dict[str, Any]:
    """A snapshot as it should read through any saver."""
    metadata = snapshot.metadata or {}
    return {
        "values": plain(snapshot.values),
        "next": snapshot.next,
        "step": metadata.get("step"),
        "source": metadata.get("source"),
        "tasks": [task_shape(task) for task in snapshot.tasks],
        "interrupts": [i.value for i in snapshot.interrupts],
    }


def latest_messages(driver: Driver, thread_id: str) -> list[dict[str, Any]]:
    """The messages channel at the thread's latest checkpoint, dumped."""
    values = driver.state(config_of(thread_id)).values
    messages: list[dict[str, Any]] = plain(values.get("messages", []))
    return messages


def checkpoint_id(config: RunnableConfig | None) -> str | None:
    return None if config is None else config["configurable"]["checkpoint_id"]


def history_shape(history: list[StateSnapshot]) -> list[dict[str, Any]]:
    """The snapshots, newest first, each with its parent's position in the list."""
    at = {checkpoint_id(s.config): k for k, s in enumerate(history)}
    parents = [checkpoint_id(s.parent_config) for s in history]
    return [
        {**shape(s), "parent": None if p is None else at.get(p, f"absent: {p}")}
        for s, p in zip(history, parents, strict=True)
    ]


@dataclass(frozen=True)
class Outcome:
    """A thread's end: its latest snapshot, its history, its messages (dumped)."""

    latest: dict[str, Any]
    history: list[dict[str, Any]]
    messages: list[dict[str, Any]]


def outcome(driver: Driver, thread_id: str) -> Outcome:
    latest = shape(driver.state(config_of(thread_id)))
    history = history_shape(driver.history(config_of(thread_id)))
    return Outcome(latest, history, latest["values"].get("messages", []))


def scripted(
    driver: Driver, plan: Plan, thread_id: str, check: Check = lambda: None
) -> Outcome:
    run_script(driver, plan, thread_id, check)
    return outcome(driver, thread_id)

