"""Fault injection: kill -9 of workers, lost wake-ups, a Redis restart, bad input, poison."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
import redis

from tests.infra.processes import wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import (
    WORKERS_ONLY,
    lose_waiting_wake_ups,
    make_settings,
    start_beat,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.core import InvalidMessage, dump_messages
from threadfold.core.messages import HumanMessage
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings


def _producer_loop(
    settings: Settings, sent: Ledger, stop: threading.Event, seed: int, errors: list[BaseException]
) -> None:
    """Enqueue until told to stop; every delta carries a delta_id and is retried until it
    is accepted, the documented way to survive a lost reply."""
    app = make_celery(settings)
    store = store_for(settings)
    producer = Producer(store.client, settings, CeleryWaker(app, settings.queue))
    rng = random.Random(seed)
    step = 0
    try:
        while not stop.is_set():
            thread = f"k{rng.randrange(20)}"
            messages = random_messages(rng, step)
            delta_id = f"{seed}-{step}"
            while True:
                try:
                    result = producer.enqueue(thread, messages, delta_id=delta_id)
                    break
                except (redis.ConnectionError, redis.TimeoutError, OSError):
                    time.sleep(0.05)
            # Recorded once per delta_id, even when the answer is "duplicate": that means an
            # attempt whose reply was lost did store it (its ids are derived from the
            # delta_id, so this answer carries the same ids).
            sent.add(f"_/{thread}", result.version, messages, result.ids)
            step += 1
            time.sleep(0.002)
    except BaseException as exc:  # surfaced by the test
        errors.append(exc)
    finally:
        app.close()


def test_kill_9_of_workers_at_random_moments_loses_nothing_and_applies_nothing_twice(
    redis_url: str, broker_url: str | None, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, broker_url=broker_url, failure_limit=1000, batch_size=20)
    rng = random.Random(3)
    workers = [start_worker(settings, f"k{i}", tmp_path) for i in range(4)]
    beat = start_beat(settings, tmp_path)
    sent, stop = Ledger(), threading.Event()
    errors: list[BaseException] = []
    producing = threading.Thread(target=_producer_loop, args=(settings, sent, stop, 5, errors))
    producing.start()
    kills = 0
    try:
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(0.2, 0.8))
            victim = rng.randrange(len(workers))
            workers[victim].kill()  # SIGKILL to the worker and its pool
            kills += 1
            workers[victim] = start_worker(settings, f"k{victim}-{kills}", tmp_path)
        stop.set()
        producing.join()
        assert not errors
        store = store_for(settings)
        wait_drained(store, sent.threads(), timeout=90)
        for ref in sent.threads():
            assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
            status = store.stored(ref)
            assert status is not None and status.applied == len(sent.deltas(ref))
        assert kills >= 10
    finally:
        stop.set()
        for worker in workers:
            worker.kill()
        beat.kill()


def test_a_wake_up_that_is_never_sent_is_recovered_by_the_sweeper(
    redis_url: str, broker_url: str | None, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, broker_url=broker_url, **WORKERS_ONLY)
    store = store_for(settings)
    lost = NoWake()  # the producer died between the append and sending the task
    producer = Producer(store.client, settings, lost)
    producer.enqueue("orphan", [{"role": "user", "content": "x", "id": "1"}])
    assert lost.refs == ["_/orphan"]  # it held the flag, so nobody else would wake it
    workers = [start_worker(settings, "s0", tmp_path)]
    beat = start_beat(settings, tmp_path)
    try:
        wait_drained(store, ["_/orphan"], timeout=30)
        assert [m["content"] for m in state_dump(store, "_/orphan")] == ["x"]
    finally:
        workers[0].kill()
        beat.kill()


def test_a_lost_broker_message_is_recovered_by_the_sweeper(
    redis_url: str, broker_url: str | None, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, broker_url=broker_url, **WORKERS_ONLY)
    store = store_for(settings)
    app = make_celery(settings)
    producer = Producer(store.client, settings, CeleryWaker(app, settings.queue))
    producer.enqueue("dropped", [{"role": "user", "content": "x", "id": "1"}])
    lose_waiting_wake_ups(app, settings.queue, expected=1)
    worker = start_worker(settings, "l0", tmp_path)
    beat = start_beat(settings, tmp_path)
    try:
        wait_drained(store, ["_/dropped"], timeout=30)
    finally:
        worker.kill()
        beat.kill()
        app.close()


def test_a_redis_restart_mid_run_keeps_every_acknowledged_delta(tmp_path: Path) -> None:
    with RedisServer(appendonly=True, appendfsync="always") as server:
        settings = make_settings(server.url, failure_limit=1000)
        workers = [start_worker(settings, f"r{i}", tmp_path) for i in range(2)]
        beat = start_beat(settings, tmp_path)
        sent, stop = Ledger(), threading.Event()
        errors: list[BaseException] = []
        producing = threading.Thread(target=_producer_loop, args=(settings, sent, stop, 9, errors))
        producing.start()
        try:
            wait_until(lambda: sent.count >= 50, 30, message="producer did not start")
            server.kill()  # SIGKILL: only what the AOF fsynced survives
            before = sent.count
            server.restart()
            wait_until(
                lambda: sent.count >= before + 50,
                60,
                message="the producer did not get through the restarted server",
            )
            stop.set()
            producing.join()
            assert not errors
            store = store_for(settings)
            wait_drained(store, sent.threads(), timeout=90)
            for ref in sent.threads():
                assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
        finally:
            stop.set()
            for worker in workers:
                worker.kill()
            beat.kill()


BAD_DELTAS = [
    (
        [{"role": "tool", "content": "x"}],
        r"^delta\.messages\[0\]\.tool_call_id: tool message needs",
    ),
    (
        [{"role": "critic", "content": "x"}],
        r"^delta\.messages\[0\]\.type: unknown message type 'critic'",
    ),
    ([{"type": "remove", "content": ""}], r"^delta\.messages\[0\]\.id: remove message needs"),
    ([{"role": "user", "content": "ok"}, 5], r"^delta\.messages\[1\]: expected a message"),
    ([], r"^delta\.messages: expected a non-empty list"),
    (  # a message object is not validated when built: its id is checked here
        [HumanMessage(content="x", id=5)],  # type: ignore[arg-type]
        r"^delta\.messages\[0\]\.id: expected a string, got 5",
    ),
    (
        [{"role": "user", "content": "x", "id": "a\udcff"}],  # a lone surrogate
        r"^delta\.messages: holds a value that is not JSON data",
    ),
    (
        [{"role": "tool", "content": "x", "tool_call_id": "c", "artifact": object()}],
        r"^delta\.messages: holds a value that is not JSON data",
    ),
    (
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{bad"}}],
            }
        ],
        r"^delta\.messages\[0\]\.tool_calls\[0\]\.function\.arguments: "
        r"arguments are not valid JSON",
    ),
]


@pytest.mark.parametrize(("messages", "error"), BAD_DELTAS)
def test_bad_input_to_the_producer_is_refused_precisely_and_appends_nothing(
    redis_url: str, messages: list[object], error: str
) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    with pytest.raises(InvalidMessage, match=error):
        producer.enqueue("bad", messages)
    assert store.status("_/bad") is None
    assert store.client.dbsize() == 0


def test_one_bad_delta_in_a_bulk_call_appends_none_of_them(redis_url: str) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    good = Delta("a", [{"role": "user", "content": "fine"}])
    with pytest.raises(InvalidMessage, match=r"^deltas\[2\]\.thread_id: thread id must be"):
        producer.enqueue_many([good, good, Delta("no spaces allowed", ["x"])])
    assert store.client.dbsize() == 0


def test_a_retried_delta_id_answers_the_original_version_and_ids(redis_url: str) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    first = producer.enqueue(
        "r", ["hello", {"role": "user", "content": "x", "id": "k"}], delta_id="once"
    )
    again = producer.enqueue(
        "r", ["hello", {"role": "user", "content": "x", "id": "k"}], delta_id="once"
    )
    assert (again.version, again.duplicate, first.duplicate) == (first.version, True, False)
    assert again.ids == first.ids and first.ids[1] == "k"
    other = producer.enqueue("r2", ["hello"], delta_id="once")
    assert other.ids != first.ids[:1]  # derived per thread: no collision across threads
    found = store.stored("_/r")  # one entry in all, committed (by the call) or waiting
    assert found is not None and found.applied + found.status.backlog == 1


def test_a_delta_id_is_forgotten_after_the_window(redis_url: str) -> None:
    settings = make_settings(redis_url, dedupe_window_seconds=0.2)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    first = producer.enqueue("w", ["a"], delta_id="x")
    time.sleep(0.3)  # the condition here is the window itself running out
    again = producer.enqueue("w", ["a"], delta_id="x")
    assert not again.duplicate and again.version != first.version
