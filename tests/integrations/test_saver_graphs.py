"""threadfold.langgraph.ThreadfoldSaver holds whole graphs as LangGraph's own
InMemorySaver does, against the real stack.

Seeded random graphs (tests/integrations/saver_graphs.py: parallel writers in one
superstep with fan-out edges and ``Send``, tool-call loops, edits and removals by id,
``REMOVE_ALL_MESSAGES``, ``Overwrite``, interrupts resumed with ``Command`` (one inside a
subgraph), a fork by ``update_state`` at an older checkpoint run on from there, a new
saver (nothing cached) after each run; messages under
``add_messages`` or ``DeltaChannel``, an ``operator.add`` list and a last-value field
beside them) run one script through each saver: ``get_state`` and
``get_state_history`` read the same (values, next, step and source, tasks and their
interrupts, parent links), with each of the four clients, through the sync methods
(Client, HttpClient) or the asyncio ones (AsyncClient, AsyncHttpClient). After each run
and each update, the thread named by the graph's thread_id holds the messages of the
graph's latest checkpoint (after a fork, the fork's). The model's answers carry what real
ones do (usage_metadata, response_metadata, an unparsed tool call); the smallest graph
that has them is a test of its own.

A process running a graph over the saver is SIGKILLed in the middle of a step; the run
resumed in another process ends as an uninterrupted one does: every write once, and
the thread holding the final messages. Its history is the uninterrupted one's but for
what LangGraph itself leaves to chance under a kill: a task's writes still on their way
to the saver when the process died (``lost_in_flight``).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from copy import deepcopy
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import StateSnapshot

from tests.client.conftest import Stack
from tests.client.kinds import TOKEN, new_thread
from tests.infra.processes import ManagedProcess, wait_until
from tests.integrations.saver_crash import crash_plan
from tests.integrations.saver_graphs import STAGES, Nodes, Plan
from tests.integrations.saver_script import (
    AsyncDriver,
    Outcome,
    SyncDriver,
    compiled,
    config_of,
    latest_messages,
    outcome,
    saver_under_test,
    scripted,
    turn_input,
)
from tests.workers.harness import ROOT, start_beat
from threadfold import (
    AsyncClient,
    AsyncHttpClient,
    Client,
    ClientProtocol,
    HttpClient,
    NotFound,
)
from threadfold.workers.ops.processes import settings_env

WAIT = 20.0
SYNC = ["Client", "HttpClient"]
ASYNC = ["AsyncClient", "AsyncHttpClient"]
#: Twelve seeds in a row that draw every feature (the first test says which).
SEEDS = list(range(10, 22))


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
    try:
        enqueued = client.status(thread_id).last_enqueued
    except NotFound:  # never written: holds no messages
        return []
    state = client.state(thread_id, min_version=enqueued, wait=WAIT)
    assert not state.has_more
    return state.messages


async def alive_messages(
    client: AsyncClient | AsyncHttpClient, thread_id: str
) -> list[dict[str, Any]]:
    try:
        enqueued = (await client.status(thread_id)).last_enqueued
    except NotFound:
        return []
    state = await client.state(thread_id, min_version=enqueued, wait=WAIT)
    assert not state.has_more
    return state.messages


def assert_same(got: Outcome, expected: Outcome) -> None:
    """Snapshot by snapshot, so a failure names the first one that differs."""
    assert got.latest == expected.latest, "get_state differs"
    assert len(got.history) == len(expected.history), "histories of different lengths"
    for back, (mine, theirs) in enumerate(zip(got.history, expected.history, strict=True)):
        assert mine == theirs, f"the history differs {back} checkpoint(s) back"


def test_the_seeds_draw_every_feature() -> None:
    """The seeds below cover each feature, with either declaration of the messages."""
    plans = [Plan.draw(seed) for seed in SEEDS]
    for delta in (False, True):
        drawn = [p for p in plans if p.delta == delta]
        assert {s for p in drawn for s in p.stages} == set(STAGES), delta
        assert {p.fork_edits for p in drawn if p.fork_back is not None} == {False, True}, delta
        assert any(p.tool_rounds == 2 and p.tool_calls == 2 for p in drawn), delta
        assert {p.fresh_savers for p in drawn} == {False, True}, delta
        assert any(p.fresh_savers and p.fork_back is not None for p in drawn), delta
    assert {p.fork_as for p in plans if p.fork_back is not None} == {"agent", "tools"}
    assert any(p.turns == 2 for p in plans)
    assert any("fanout" in p.stages and p.sends > 1 for p in plans)



class ReplaysStepsBackwards(InMemorySaver):
    """A saver that gives a superstep's stored writes back in the reverse of LangGraph's
    order (as one that kept no task paths, or sorted by the wrong key, would)."""

    def _ordered_writes(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str
    ) -> list[tuple[str, str, tuple[str, bytes], str]]:
        return super()._ordered_writes(thread_id, checkpoint_ns, checkpoint_id)[::-1]


def test_the_comparison_tells_a_saver_that_replays_a_step_out_of_order() -> None:
    """The harness is sharp: a DeltaChannel graph with a fan-out step, whose messages are
    rebuilt from the step's writes, reads differently through such a saver."""
    plan = next(p for p in map(Plan.draw, SEEDS) if p.delta and "fanout" in p.stages)
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver())), plan, "t")
    got = scripted(SyncDriver(compiled(plan, ReplaysStepsBackwards())), plan, "t")
    with pytest.raises(AssertionError, match="differs"):
        assert_same(got, expected)


#: The smallest plan with a model's answers: one tool round of two calls (and one the
#: model could not parse), the answer; no stage, no fork.
ONE_ROUND = Plan(
    seed=-2, delta=False, tool_rounds=1, tool_calls=2, stages=(), sends=1, edit_at=0,
    remove_at=0, keep_last=False, turns=1, fork_back=None, fork_as="agent",
    fork_edits=False, fresh_savers=False,
)  # fmt: skip


@pytest.mark.parametrize("delta", [False, True], ids=["add_messages", "DeltaChannel"])
@pytest.mark.parametrize("kind", SYNC)
def test_a_models_answers_keep_their_fields_in_the_thread_and_the_state(
    kind: str, delta: bool, stack: Stack
) -> None:
    """AI messages as models give them (usage_metadata, response_metadata,
    invalid_tool_calls) read back the same from the graph's state and the thread."""
    plan, thread = replace(ONE_ROUND, delta=delta), new_thread()
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver())), plan, thread)
    with sync_client(kind, stack) as client:
        got = scripted(SyncDriver(compiled(plan, saver_under_test(client))), plan, thread)
        live = live_messages(client, thread)
    assert got.latest == expected.latest, "the graph's state differs"
    assert live == expected.messages, "the thread differs"

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kind", SYNC)
def test_a_graph_over_a_sync_client_reads_as_over_the_in_memory_saver(
    kind: str, seed: int, stack: Stack
) -> None:
    plan, thread = Plan.draw(seed), new_thread()
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver())), plan, thread)
    with sync_client(kind, stack) as client:
        driver = SyncDriver(compiled(plan, saver_under_test(client)))

        def check() -> None:  # after each run or update: the thread is the latest's
            assert live_messages(client, thread) == latest_messages(driver, thread)
            if plan.fresh_savers:
                driver.graph = compiled(plan, saver_under_test(client))

        assert_same(scripted(driver, plan, thread, check), expected)


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

        def check() -> None:
            live = runner.run(alive_messages(client, thread))
            assert live == latest_messages(driver, thread)
            if plan.fresh_savers:
                driver.graph = compiled(plan, saver_under_test(client))

        assert_same(scripted(driver, plan, thread, check), expected)
    finally:
        runner.run(client.close())

FANNED = ("worker", "side")


@pytest.fixture(scope="module")
def sweeper(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Celery beat beside the stack's worker: a process killed before its wake-ups were
    published leaves its thread to the sweeper (wake-ups are sent from a thread of the
    client's, after the append returns), as a deployment has it; the shared stack runs
    none."""
    beat = start_beat(stack.settings, tmp_path_factory.mktemp("saver-beat"))
    try:
        yield
    finally:
        beat.kill()


def killed_in_the_fan_out(
    stack: Stack, thread_id: str, tmp_path: Path, messages: str, durability: str
) -> None:
    """The crash plan run in a child process, SIGKILLed once its ``side`` node blocks
    (the other tasks of that step may or may not have finished by then)."""
    marker, log = tmp_path / "blocked", tmp_path / "child.log"
    argv = [sys.executable, "-m", "tests.integrations.saver_crash", thread_id, str(marker)]
    env = {**settings_env(stack.settings), "PYTHONPATH": str(ROOT)}
    child = ManagedProcess([*argv, messages, durability], env=env, log_path=log, cwd=ROOT)
    try:
        wait_until(lambda: marker.exists() or not child.alive, 120, message="child stuck")
        assert marker.exists(), f"the child ended before blocking: {log.read_text()}"
    finally:
        assert child.kill() == -signal.SIGKILL, log.read_text()


def reruns(before: StateSnapshot, reference: Counter[str]) -> dict[str, int]:
    """How many times the fan-out's nodes must run on resuming from ``before``: as in a
    whole run if it is before the fan-out step; else its tasks that saved no writes."""
    if not any(task.name == "side" for task in before.tasks):
        return {name: reference[name] for name in FANNED}
    return {n: sum(t.name == n and t.result is None for t in before.tasks) for n in FANNED}


@pytest.mark.parametrize("durability", ["sync", "async"])
@pytest.mark.parametrize("messages", ["add", "delta"])
def test_a_run_killed_in_a_step_resumes_to_the_end_of_an_uninterrupted_one(
    messages: str, durability: str, stack: Stack, tmp_path: Path, sweeper: None
) -> None:
    plan, thread = crash_plan(messages == "delta"), new_thread()
    reference = Nodes(plan)
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver(), reference)), plan, thread)
    killed_in_the_fan_out(stack, thread, tmp_path, messages, durability)
    with Client(settings=stack.settings) as client:
        nodes = Nodes(plan)
        driver = SyncDriver(compiled(plan, saver_under_test(client), nodes))
        config = config_of(thread)
        before = driver.state(config)
        if durability == "sync":  # the step's checkpoint was saved before its tasks ran
            assert "side" in before.next and before.tasks
        must_run = reruns(before, reference.calls)
        driver.invoke(None, config)
        got = outcome(driver, thread)
        if not plan.delta:  # no DeltaChannel write makes a save wait for the writes
            expected = lost_in_flight(expected, got, resumed_step(before))
        assert_same(got, expected)
        ids = [message["id"] for message in got.messages]
        assert len(ids) == len(set(ids)) == len(expected.messages)
        assert {name: nodes.calls[name] for name in FANNED} == must_run
        assert live_messages(client, thread) == got.messages


def resumed_step(before: StateSnapshot) -> int:
    """The step of the checkpoint a killed run is resumed from (-2: none saved)."""
    step: int = (before.metadata or {}).get("step", -2)
    return step


def lost_in_flight(expected: Outcome, got: Outcome, resumed: int) -> Outcome:
    """The uninterrupted run's history as LangGraph guarantees it of a killed one that
    was resumed from its checkpoint of step ``resumed``: a task of an older checkpoint
    may have no result (``got`` has none there).

    LangGraph hands a task's writes (``put_writes``) and the next step's checkpoint
    (``put``) to its background threads as two jobs, in either durability: a
    checkpoint's save waits for the previous checkpoint's, and for the writes before
    it only when they hold a DeltaChannel's (``_checkpointer_put_after_previous``
    waits on ``prev`` and ``delta_write_futs``). So a process killed while a task's
    writes are still on their way can leave their checkpoint saved without them and
    the next ones saved on top, whatever the saver (LangGraph's PostgresSaver too;
    ``test_langgraph_saves_a_step_before_the_writes_of_the_last``). The resumed run
    goes on from its latest checkpoint and never runs that task again. Its values,
    next tasks, every other field stay the uninterrupted run's; so do the tasks of
    the checkpoint resumed from, which the resumed run reruns and saves."""
    if len(got.history) != len(expected.history):
        return expected  # assert_same says so
    history = []
    for mine, theirs in zip(got.history, expected.history, strict=True):
        tasks = theirs["tasks"]
        if theirs["step"] < resumed and len(mine["tasks"]) == len(tasks):
            tasks = [
                {**t, "result": None} if m["result"] is None and m["name"] == t["name"] else t
                for m, t in zip(mine["tasks"], tasks, strict=True)
            ]
        history.append({**theirs, "tasks": tasks})
    return replace(expected, history=history)


class HoldsAWrite(InMemorySaver):
    """LangGraph's in-memory saver whose ``put_writes`` of a task writing ``channel``
    does not reach it until ``release`` (its thread stalled on the way, as a busy
    machine's may), and whose content can be copied at any moment: what a process
    killed then leaves a saver that persists."""

    def __init__(self, channel: str) -> None:
        super().__init__()
        self.channel = channel
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.saved_steps: list[int] = []

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        with self.lock:
            saved = super().put(config, checkpoint, metadata, new_versions)
            self.saved_steps.append(metadata["step"])
            return saved

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        if any(channel == self.channel for channel, _ in writes):
            self.release.wait(WAIT)
        with self.lock:
            super().put_writes(config, writes, task_id, task_path)

    def killed(self) -> InMemorySaver:
        """A saver holding what this one holds now."""
        with self.lock:
            left = InMemorySaver()
            left.storage, left.writes, left.blobs = deepcopy(
                (self.storage, self.writes, self.blobs))
            return left


@dataclass
class Paused(Nodes):
    """The nodes, ``side`` waiting for ``go`` (and telling it ``reached`` it)."""

    reached: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)

    def side(self, state: Any) -> dict[str, Any]:
        self.reached.set()
        self.go.wait(WAIT)
        return super().side(state)


@pytest.mark.parametrize("messages", ["add", "delta"])
def test_langgraph_saves_a_step_before_the_writes_of_the_last(messages: str) -> None:
    """What the crash test expects of a killed run's history, shown with LangGraph's own
    saver, no process killed: the crash plan run with the writes of its last agent
    task (step 4, the one routing to ``editor``) held on their way to the saver, its
    content copied once ``side`` runs in the fan-out step, and resumed from that copy.
    With ``add_messages`` the later steps are saved all the same: the resumed history
    lacks that task's result, and nothing else (``lost_in_flight``). A DeltaChannel's
    writes are waited for: no checkpoint after step 4 is saved, step 4 is rerun, and the
    history is the uninterrupted run's."""
    plan, thread = crash_plan(messages == "delta"), "t"
    expected = scripted(SyncDriver(compiled(plan, InMemorySaver())), plan, thread)
    saver, paused, config = HoldsAWrite("branch:to:editor"), Paused(plan), config_of(thread)
    graph = compiled(plan, saver, paused)
    run = threading.Thread(
        target=lambda: graph.invoke(turn_input(0), config, durability="async"), daemon=True)
    run.start()
    try:
        last = 4 if plan.delta else 7  # the fan-out step's checkpoint, or the held one's
        wait_until(lambda: paused.reached.is_set() and last in saver.saved_steps, WAIT,
                   message="the fan-out step not reached")
        left = saver.killed()
    finally:
        saver.release.set()
        paused.go.set()
        run.join(WAIT)
    assert max(saver.saved_steps) == 9  # the held run went on to its end
    driver = SyncDriver(compiled(plan, left))
    before = driver.state(config)
    assert resumed_step(before) == last
    driver.invoke(None, config)
    got = outcome(driver, thread)
    if plan.delta:
        assert_same(got, expected)
        return
    lost = lost_in_flight(expected, got, resumed_step(before))
    assert_same(got, lost)
    differ = [(e["step"], t["name"]) for e, h in zip(expected.history, lost.history, strict=True)
              for t, u in zip(e["tasks"], h["tasks"], strict=True) if t != u]
    assert differ == [(4, "agent")]
