"""Issue 17's proof, against real processes: subscribers that rebuild threads from their
events hold, at every version they reach, exactly what ``GET state`` reads at that
version (time travel) and, at the end, the one-delta-at-a-time fold; an API process
killed mid-stream costs a subscriber nothing (it resumes with ``Last-Event-ID``: no
version lost, none twice); a feed trimmed past a subscriber gives it a snapshot.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.infra.processes import wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker
from tests.workers.produce import random_messages
from threadfold import Client, Event, HttpClient, Snapshot, Transcript
from threadfold.core import dump_messages
from threadfold.testing import Ledger
from threadfold.workers.ops.processes import ManagedProcess, free_port
from threadfold.workers.settings import Settings


@dataclass
class Watcher:
    """One subscriber in a thread of its own: every version it reached and the messages
    it held there, and the events it was sent."""

    client: HttpClient
    thread_id: str
    transcript: Transcript = field(default_factory=Transcript)
    held: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    failure: BaseException | None = None

    def start(self) -> threading.Thread:
        runner = threading.Thread(target=self._run, daemon=True)
        runner.start()
        return runner

    def _run(self) -> None:
        try:
            for event in self.client.subscribe(self.thread_id):
                self.transcript.apply(event)  # raises on a change that does not follow on
                self.events.append(event)
                assert event.version not in self.held or isinstance(event, Snapshot)
                self.held[event.version] = self.transcript.messages
        except BaseException as exc:  # the test reads it; closing ends here too
            self.failure = exc

    @property
    def version(self) -> str | None:
        return self.transcript.version


def _writes(client: Client, sent: Ledger, threads: list[str], n: int, seed: int) -> None:
    rng = random.Random(seed)
    for step in range(n):
        thread = rng.choice(threads)
        messages = random_messages(rng, step)
        result = client.append(thread, messages)
        sent.add(f"_/{thread}", result.version, messages, result.ids)
        if rng.random() < 0.1:
            time.sleep(rng.random() * 0.05)  # some batches of one delta, some of many


def _finals(client: Client, threads: list[str]) -> dict[str, str]:
    """Each thread's version once everything written is applied."""
    out = {}
    for thread in threads:
        status = client.status(thread)
        out[thread] = client.wait_for(thread, status.last_enqueued, timeout=60)
    return out


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[Settings, Path]]:
    with RedisServer() as server:
        settings = make_settings(server.url, retention_seconds=3600, batch_size=7)
        worker = start_worker(settings, "live", tmp_path, concurrency=2)
        try:
            yield settings, tmp_path
        finally:
            worker.kill()


def test_subscribers_hold_the_state_of_every_version_they_reach(
    stack: tuple[Settings, Path],
) -> None:
    settings, logs = stack
    api, url = start_api(settings, logs)
    threads = ["p0", "p1", "p2"]
    sent = Ledger()
    watchers = [Watcher(HttpClient(url), t) for t in threads for _ in range(2)]
    try:
        with Client(settings=settings) as writer:
            for w in watchers:
                w.start()
            wait_until(lambda: all(w.version == "0-0" for w in watchers), 30)
            _writes(writer, sent, threads, 600, seed=17)
            finals = _finals(writer, threads)
            wait_until(lambda: all(w.version == finals[w.thread_id] for w in watchers), 60)
        reader = HttpClient(url)
        for w in watchers:
            assert w.failure is None, w.failure
            assert sum(isinstance(e, Snapshot) for e in w.events) == 1  # the start only
            assert len(w.held) > 20, "the subscriber saw many versions"
            for version, messages in w.held.items():
                if version != "0-0":
                    assert messages == reader.state(w.thread_id, at_version=version).messages
            expected = dump_messages(sent.expected(f"_/{w.thread_id}"))
            assert w.transcript.messages == expected
        reader.close()
    finally:
        for w in watchers:
            w.client.close()
        api.kill()


def test_an_api_killed_mid_stream_costs_the_subscriber_nothing(
    stack: tuple[Settings, Path],
) -> None:
    settings, logs = stack
    port = free_port()
    api: ManagedProcess = start_api(settings, logs / "first", port=port)[0]
    threads = ["k0", "k1"]
    sent = Ledger()
    url = f"http://127.0.0.1:{port}"
    watchers = [Watcher(HttpClient(url, retries=50, max_backoff=0.5), t) for t in threads]
    try:
        with Client(settings=settings) as writer:
            for w in watchers:
                w.start()
            wait_until(lambda: all(w.version == "0-0" for w in watchers), 30)
            _writes(writer, sent, threads, 150, seed=3)
            api.kill()  # SIGKILL: no goodbye on the streams
            _writes(writer, sent, threads, 150, seed=4)  # while no API serves them
            _finals(writer, threads)
            api = start_api(settings, logs / "second", port=port)[0]
            _writes(writer, sent, threads, 150, seed=5)
            finals = _finals(writer, threads)
            wait_until(lambda: all(w.version == finals[w.thread_id] for w in watchers), 60)
        for w in watchers:
            assert w.failure is None, w.failure
            # One snapshot (the start): what the stream missed came as changes, resumed.
            assert [type(e) for e in w.events].count(Snapshot) == 1
            versions = [e.version for e in w.events]
            assert len(versions) == len(set(versions))  # nothing twice
            assert w.transcript.messages == dump_messages(sent.expected(f"_/{w.thread_id}"))
    finally:
        for w in watchers:
            w.client.close()
        api.kill()


def test_a_feed_trimmed_past_the_subscriber_gives_it_a_snapshot(tmp_path: Path) -> None:
    with RedisServer() as server:
        small = make_settings(server.url, feed_max_events=5, batch_size=1)
        worker = start_worker(small, "trim", tmp_path)
        api, url = start_api(small, tmp_path)
        try:
            with Client(settings=small) as writer, HttpClient(url) as reader:
                writer.append("tr", [{"role": "user", "content": "first", "id": "f"}])
                held = _finals(writer, ["tr"])["tr"]
                _writes(writer, Ledger(), ["tr"], 400, seed=9)  # one commit each: it trims
                final = _finals(writer, ["tr"])["tr"]
                events = reader.subscribe("tr", after=held)
                first = next(events)
                assert isinstance(first, Snapshot)
                assert (first.reason, first.version) == ("resume_gap", final)
                assert first.messages == reader.state("tr").messages
                events.close()  # type: ignore[attr-defined]
        finally:
            api.kill()
            worker.kill()
