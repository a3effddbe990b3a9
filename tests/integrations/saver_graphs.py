"""Seeded random LangGraph graphs for the checkpoint saver tests: a plan drawn from a
seed (``Plan.draw``) picks which features a graph combines, and ``build`` makes it.

Every graph starts with a tool-calling agent (a fake model: agent -> tools -> agent, the
rounds and the calls a round drawn), followed by stages in a drawn order:

- ``fanout``: ``split`` sends jobs to ``worker`` tasks (``Send``) beside a ``side`` node,
  all of them writing messages in one superstep;
- ``edit``: ``editor`` rewrites one message by id (same id, new content) and removes
  another (``RemoveMessage``);
- ``reset``: ``summarize`` writes ``REMOVE_ALL_MESSAGES``, a summary, and maybe the last
  message again;
- ``overwrite``: ``rewrite`` replaces the channel outright (``Overwrite``);
- ``review``: ``review`` stops at ``interrupt`` and writes the answer it is resumed with;
- ``nested``: a subgraph (a checkpoint namespace of its own) writes a message, then
  stops at an interrupt inside.

The messages are declared with ``add_messages`` or with the (beta) ``DeltaChannel`` and
its batch reducer; beside them run an ``operator.add`` list (``log``: one entry per node
run, so a write applied twice shows) and a last-value field (``last``).

Every message carries an id derived from the state (the length of ``log``), never a
random one, so two runs of a plan (two savers, two processes) give equal states.
"""

from __future__ import annotations

import operator
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    ToolMessage,
)
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import REMOVE_ALL_MESSAGES, _messages_delta_reducer, add_messages
from langgraph.types import Overwrite, Send, interrupt

STAGES = ("fanout", "edit", "reset", "overwrite", "review", "nested")
#: The node a stage starts with, and those it ends with (edges go from them to the next).
ENTRY = {"fanout": "split", "edit": "editor", "reset": "summarize", "overwrite": "rewrite"}
ENTRY.update(review="review", nested="nested")
EXITS = {"fanout": ("worker", "side")}


class AddState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    log: Annotated[list[str], operator.add]
    last: str


class DeltaState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]
    log: Annotated[list[str], operator.add]
    last: str


@dataclass(frozen=True)
class Plan:
    """What one graph and its script combine (see the module's docstring)."""

    seed: int
    delta: bool
    tool_rounds: int
    tool_calls: int
    stages: tuple[str, ...]
    sends: int
    edit_at: int
    remove_at: int
    keep_last: bool
    turns: int
    #: The fork: how many checkpoints back from the latest (None: no fork), and the node
    #: the update is made as ("agent": on to the stages; "tools": the agent again).
    fork_back: int | None
    fork_as: str
    #: Whether the fork's update also removes the first message and rewrites the last.
    fork_edits: bool
    #: Whether the graph under test gets a new saver (nothing cached) after each run, as
    #: when another process goes on with the thread.
    fresh_savers: bool

    @classmethod
    def draw(cls, seed: int) -> Plan:
        rng = random.Random(seed)
        stages = [s for s in STAGES if rng.random() < 0.6]
        rng.shuffle(stages)
        return cls(
            seed=seed,
            delta=bool(seed % 2),  # alternate, so that both declarations get half the seeds
            tool_rounds=rng.randint(0, 2),
            tool_calls=rng.randint(1, 2),
            stages=tuple(stages),
            sends=rng.randint(1, 3),
            edit_at=rng.randrange(100),
            remove_at=rng.randrange(100),
            keep_last=rng.random() < 0.5,
            turns=rng.randint(1, 2),
            fork_back=rng.randint(1, 12) if rng.random() < 0.7 else None,
            fork_as=rng.choice(["agent", "tools"]),
            fork_edits=rng.random() < 0.5,
            fresh_savers=rng.random() < 0.5,
        )


def tool_rounds_since_human(messages: list[AnyMessage]) -> int:
    """The agent's tool-calling turns since the last human message (all, if none)."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            break
        rounds += bool(getattr(message, "tool_calls", None))
    return rounds


@dataclass
class Nodes:
    """The nodes of a plan's graph. ``block``: ``side`` writes that file, then never
    returns (the crash test kills its process there). ``calls`` counts node runs."""

    plan: Plan
    block: Path | None = None
    calls: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ran(self, name: str) -> list[str]:
        with self.lock:  # parallel tasks run on threads of their own
            self.calls[name] += 1
        return [name]

    def agent(self, state: Any) -> dict[str, Any]:
        messages, n = state["messages"], len(state["log"])
        # What a real model's answers carry besides content: usage, response metadata,
        # and, in a turn of two tool calls, a third call it could not parse.
        m = len(messages)
        usage = {"input_tokens": m, "output_tokens": n, "total_tokens": m + n}
        meta = {"usage_metadata": usage, "response_metadata": {"model_name": "fake"}}
        if tool_rounds_since_human(messages) < self.plan.tool_rounds:
            calls = [
                {"name": "mul", "args": {"a": n, "b": k + 2}, "id": f"call-{n}-{k}"}
                for k in range(self.plan.tool_calls)
            ]
            bad = [{"name": "mul", "args": "{", "id": f"bad-{n}", "error": "not JSON"}]
            unparsed = bad if self.plan.tool_calls == 2 else []
            planned = AIMessage(
                "", id=f"ai-{n}", tool_calls=calls, invalid_tool_calls=unparsed, **meta
            )
        else:
            planned = AIMessage(f"answer after {m} messages", id=f"ai-{n}", **meta)
        # A chat model's own path (callbacks, the message it gives back), scripted: one
        # answer a call, chosen from the state, so that a replay answers the same.
        reply = GenericFakeChatModel(messages=iter([planned])).invoke(messages)
        return {"messages": [reply], "log": self.ran("agent"), "last": "agent"}

    def route(self, after: str) -> Any:
        def route(state: Any) -> str:
            last = state["messages"][-1] if state["messages"] else None
            return "tools" if getattr(last, "tool_calls", None) else after

        return route

    def tools(self, state: Any) -> dict[str, Any]:
        calls = getattr(state["messages"][-1], "tool_calls", [])
        answers = [
            ToolMessage(
                str(c["args"]["a"] * c["args"]["b"]), tool_call_id=c["id"], id=f"t-{c['id']}"
            )
            for c in calls
        ]
        return {"messages": answers, "log": self.ran("tools"), "last": "tools"}

    def split(self, state: Any) -> dict[str, Any]:
        n = len(state["log"])
        note = AIMessage(f"{self.plan.sends} jobs", id=f"split-{n}")
        return {"messages": [note], "log": self.ran("split"), "last": "split"}

    def fan(self, state: Any) -> list[Send | str]:
        n = len(state["log"])
        jobs: list[Send | str] = [
            Send("worker", {"job": i, "n": n}) for i in range(self.plan.sends)
        ]
        return [*jobs, "side"]

    def worker(self, state: Any) -> dict[str, Any]:  # the Send's job, not the state
        job, n = state["job"], state["n"]
        done = AIMessage(f"job {job} done", id=f"worker-{n}-{job}")
        return {"messages": [done], "log": self.ran("worker")}

    def side(self, state: Any) -> dict[str, Any]:
        n = len(state["log"])
        if self.block is not None:
            self.block.write_text(str(n))
            while True:  # killed here: the test waits for the file, then SIGKILLs us
                time.sleep(60)
        return {"messages": [AIMessage("side note", id=f"side-{n}")], "log": self.ran("side")}

    def editor(self, state: Any) -> dict[str, Any]:
        messages, n = state["messages"], len(state["log"])
        if len(messages) < 2:
            return {"log": self.ran("editor"), "last": "editor"}
        p = self.plan.edit_at % len(messages)
        q = (p + 1 + self.plan.remove_at % (len(messages) - 1)) % len(messages)
        edited = messages[p].model_copy(update={"content": f"edited at {n}"})
        writes = [edited, RemoveMessage(id=str(messages[q].id))]
        return {"messages": writes, "log": self.ran("editor"), "last": "editor"}

    def summarize(self, state: Any) -> dict[str, Any]:
        messages, n = state["messages"], len(state["log"])
        kept = messages[-1:] if self.plan.keep_last else []
        summary = AIMessage(f"summary of {len(messages)}", id=f"summary-{n}")
        writes = [RemoveMessage(id=REMOVE_ALL_MESSAGES), summary, *kept]
        return {"messages": writes, "log": self.ran("summarize"), "last": "summarize"}

    def rewrite(self, state: Any) -> dict[str, Any]:
        messages, n = state["messages"], len(state["log"])
        kept: list[BaseMessage] = messages[:1]
        fresh = [*kept, AIMessage(f"rewritten from {len(messages)}", id=f"rewrite-{n}")]
        return {"messages": Overwrite(fresh), "log": self.ran("rewrite"), "last": "rewrite"}

    def review(self, state: Any) -> dict[str, Any]:
        n = len(state["log"])
        answer = interrupt({"review": n})
        said = HumanMessage(f"review: {answer}", id=f"review-{n}")
        return {"messages": [said], "log": self.ran("review"), "last": "review"}

    def draft(self, state: Any) -> dict[str, Any]:
        n = len(state["log"])
        drafted = AIMessage(f"draft {n}", id=f"draft-{n}")
        return {"messages": [drafted], "log": self.ran("draft"), "last": "draft"}

    def check(self, state: Any) -> dict[str, Any]:
        n = len(state["log"])
        answer = interrupt({"check": n})
        said = HumanMessage(f"checked: {answer}", id=f"check-{n}")
        return {"messages": [said], "log": self.ran("check"), "last": "check"}


def nested(nodes: Nodes) -> Any:
    """A subgraph (its checkpoints in a namespace of their own): ``draft`` writes a
    message, ``check`` stops at an interrupt, then writes the answer."""
    inner: StateGraph[Any, Any, Any, Any] = StateGraph(schema(nodes.plan))
    inner.add_node("draft", nodes.draft)
    inner.add_node("check", nodes.check)
    inner.add_edge(START, "draft")
    inner.add_edge("draft", "check")
    return inner.compile()


def schema(plan: Plan) -> type[Any]:
    return DeltaState if plan.delta else AddState


def build(nodes: Nodes) -> StateGraph[Any, Any, Any, Any]:
    """The plan's graph (not compiled: the caller gives the checkpointer)."""
    plan = nodes.plan
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(schema(plan))
    builder.add_node("agent", nodes.agent)
    builder.add_node("tools", nodes.tools)
    builder.add_edge(START, "agent")
    builder.add_edge("tools", "agent")
    entries = [ENTRY[stage] for stage in plan.stages] + [END]
    builder.add_conditional_edges("agent", nodes.route(entries[0]), ["tools", entries[0]])
    for stage, after in zip(plan.stages, entries[1:], strict=True):
        action = nested(nodes) if stage == "nested" else getattr(nodes, ENTRY[stage])
        builder.add_node(ENTRY[stage], action)
        if stage == "fanout":
            builder.add_node("worker", nodes.worker)
            builder.add_node("side", nodes.side)
            builder.add_conditional_edges("split", nodes.fan, ["worker", "side"])
        for exit_node in EXITS.get(stage, (ENTRY[stage],)):
            builder.add_edge(exit_node, after)
    return builder
