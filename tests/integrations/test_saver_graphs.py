"""threadfold.langgraph.ThreadfoldSaver holds whole graphs as LangGraph's own
InMemorySaver does, against the real stack.

Seeded random graphs (tests/integrations/saver_graphs.py: parallel writers in one
superstep with fan-out edges and ``Send``, tool-call loops, edits and removals by id,
``REMOVE_ALL_MESSAGES``, ``Overwrite``, interrupts resumed with ``Command``, a fork by
``update_state`` at an older checkpoint run on from there; messages under
``add_messages`` or ``DeltaChannel``, an ``operator.add`` list and a last-value field
beside them) run one script through each saver: ``get_state`` and
``get_state_history`` read the same (values, next, step and source, tasks and their
interrupts, parent links), with each of the four clients, through the sync methods
(Client, HttpClient) or the asyncio ones (AsyncClient, AsyncHttpClient). Each run ends
with the thread named by the graph's thread_id holding the messages of the graph's
latest checkpoint (after a fork, the fork's).

A process running a graph over the saver is SIGKILLed in the middle of a step; the run
resumed in another process ends as an uninterrupted one does: every write once, and
the thread holding the final messages.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from tests.integrations.saver_graphs import STAGES, Plan
from tests.integrations.saver_script import (
    REAL,
    AsyncDriver,
    Outcome,
    SyncDriver,
    assert_same,
    compiled,
    saver_under_test,
    scripted,
)
from threadfold import AsyncClient, AsyncHttpClient, Client, ClientProtocol, HttpClient

WAIT = 20.0
SYNC = ["Client", "HttpClient"]
ASYNC = ["AsyncClient", "AsyncHttpClient"]
SEEDS = list(range(8))


def sync_client(kind: str, stack: Stack) -> ClientProtocol:
    if kind == "Client":
        return Client(settings=stack.settings)
    return HttpClient(stack.api_url, TOKEN)


async def async_client(kind: str, stack: Stack) -> AsyncClient | AsyncHttpClient:
    """Made on the runner's loop, which its connections belong to."""
    if kind == "AsyncClient":
        return AsyncClient(settings=stack.settings)
    return AsyncHttpClient(stack.api_url, TOKEN)


def live_messages(client: ClientProtocol, thread_id: str) -> list[dict[str, Any]]:
    """The thread once everything appended to it so far is folded (the saver's appends
    are folded by the worker, after they are acknowledged)."""
    enqueued = client.status(thread_id).last_enqueued
    state = client.state(thread_id, min_version=enqueued, wait=WAIT)
    assert not state.has_more
    return state.messages


async def alive_messages(
    client: AsyncClient | AsyncHttpClient, thread_id: str
) -> list[dict[str, Any]]:
    enqueued = (await client.status(thread_id)).last_enqueued
    state = await client.state(thread_id, min_version=enqueued, wait=WAIT)
    assert not state.has_more
    return state.messages


def test_the_seeds_draw_every_feature() -> None:
    """The seeds below cover each feature, with either declaration of the messages."""
    plans = [Plan.draw(seed) for seed in SEEDS]
    for delta in (False, True):
        drawn = [p for p in plans if p.delta == delta]
        assert {s for p in drawn for s in p.stages} == set(STAGES), delta
        assert any(p.fork_back is not None for p in drawn), delta
        assert any(p.tool_rounds == 2 and p.tool_calls == 2 for p in drawn), delta
    features = Counter(p.fork_as for p in plans if p.fork_back is not None)
    assert set(features) == {"agent", "tools"}
    assert any(p.turns == 2 for p in plans)
    assert any("fanout" in p.stages and p.sends > 1 for p in plans)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", SYNC)
def test_a_graph_over_a_sync_client_reads_as_over_the_in_memory_saver(
    kind: str, seed: int, stack: Stack
) -> None:
    plan, thread = Plan.draw(seed), new_thread()
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver())), plan, thread)
    with sync_client(kind, stack) as client:
        got = scripted(SyncDriver(compiled(plan, saver_under_test(client))), plan, thread)
        assert_same(got, expected)
        if REAL:
            assert live_messages(client, thread) == got.messages


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", ASYNC)
def test_a_graph_over_an_asyncio_client_reads_as_over_the_in_memory_saver(
    kind: str, seed: int, stack: Stack, runner: asyncio.Runner
) -> None:
    plan, thread = Plan.draw(seed), new_thread()
    expected = scripted(AsyncDriver(compiled(plan, InMemorySaver()), runner), plan, thread)
    client = runner.run(async_client(kind, stack))
    try:
        driver = AsyncDriver(compiled(plan, saver_under_test(client)), runner)
        got: Outcome = scripted(driver, plan, thread)
        assert_same(got, expected)
        if REAL:
            assert runner.run(alive_messages(client, thread)) == got.messages
    finally:
        runner.run(client.close())
