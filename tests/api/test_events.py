"""``GET /threads/{id}/events`` against real processes: a redis-server, an API process,
a Celery worker. Subscribers rebuild the state from the events (the apply rule) and
must equal ``GET state`` at every version they see."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.api.sse_reader import Follower, close, open_stream
from tests.workers.harness import make_settings, start_api, start_worker
from tests.workers.produce import random_messages
from threadfold.workers.processes import ManagedProcess
from threadfold.workers.settings import Settings

FAST_SSE = {"THREADFOLD_SSE_HEARTBEAT_SECONDS": "0.3"}


class Stack:
    def __init__(self, url: str, settings: Settings, procs: list[ManagedProcess]) -> None:
        self.client = httpx.Client(base_url=url, timeout=30)
        self.settings = settings
        self.procs = procs

    def post(self, thread: str, messages: list[Any], headers: dict[str, str] | None = None) -> str:
        response = self.client.post(
            f"/threads/{thread}/deltas", json={"messages": messages}, headers=headers
        )
        assert response.status_code == 202, response.text
        version: str = response.json()["version"]
        return version

    def state(self, thread: str, **query: str) -> dict[str, Any]:
        response = self.client.get(f"/threads/{thread}/state", params={"wait": "10", **query})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def close(self) -> None:
        self.client.close()
        for proc in self.procs:
            proc.kill()


def _stack(
    redis_url: str, log_dir: Path, worker: bool = True, settings: dict[str, Any] | None = None,
    **env: str,
) -> Stack:
    values = {"retention_seconds": 3600, **(settings or {})}
    settings_ = make_settings(redis_url, **values)
    api, url = start_api(settings_, log_dir, port=None, **{**FAST_SSE, **env})
    procs = [api]
    if worker:
        procs.append(start_worker(settings_, "sse", log_dir))
    return Stack(url, settings_, procs)


@pytest.fixture
def stack(redis_url: str, tmp_path: Path) -> Iterator[Stack]:
    s = _stack(redis_url, tmp_path)
    try:
        yield s
    finally:
        s.close()


def _follow_until(stream: Any, follower: Follower, version: str) -> None:
    while follower.version != version:
        event = stream.next()
        assert event is not None, "the stream ended"
        follower.take(event)


def _check_each_version(stack: Stack, thread: str, follower: Follower) -> None:
    for version, messages in follower.seen:
        expected = stack.state(thread, at_version=version) if version != "0-0" else None
        assert messages == (expected["messages"] if expected else []), version


def test_snapshot_then_changes_equal_get_state_at_every_version(stack: Stack) -> None:
    rng = random.Random(17)
    stack.post("t", [{"role": "user", "content": "first", "id": "m0"}])
    first = stack.state("t", min_version=stack.post("t", [["ai", "hello"]]))["version"]
    stream = open_stream(stack.client, "/threads/t/events")
    assert stream.response.status_code == 200
    assert stream.response.headers["content-type"].startswith("text/event-stream")
    assert stream.response.headers["cache-control"] == "no-cache"
    assert stream.response.headers["x-accel-buffering"] == "no"
    retry = stream.next(skip_comments=False)
    assert retry is not None and retry.kind == "retry" and retry.text == "1000"
    snap = stream.next()
    assert snap is not None and snap.kind == "snapshot"
    assert snap.data["reason"] == "start" and snap.data["exists"] is True
    assert snap.data["version"] >= first and snap.data["format"] == "langchain"
    follower = Follower()
    follower.take(snap)
    last = ""
    for step in range(60):
        last = stack.post("t", random_messages(rng, step))
    final = stack.state("t", min_version=last)["version"]
    _follow_until(stream, follower, final)
    close(stream)
    assert len(follower.seen) > 3
    _check_each_version(stack, "t", follower)
    assert follower.seen[-1][1] == stack.state("t")["messages"]


def test_a_thread_that_does_not_exist_yet_starts_empty(stack: Stack) -> None:
    stream = open_stream(stack.client, "/threads/new/events?format=openai")
    snap = stream.next()
    assert snap is not None and snap.kind == "snapshot"
    assert snap.data["exists"] is False and snap.data["version"] == "0-0"
    assert snap.data["messages"] == [] and snap.data["format"] == "openai"
    version = stack.post("new", [["user", "hi"], ["ai", "hello"]])
    change = stream.next()
    close(stream)
    assert change is not None and change.kind == "change" and change.data["prev"] == "0-0"
    assert change.id == stack.state("new", min_version=version)["version"]
    expected = stack.state("new", format="openai")["messages"]
    assert [u["message"] for u in change.data["upserts"]] == expected
    assert expected == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_resume_with_last_event_id_gets_exactly_the_missing_changes(stack: Stack) -> None:
    rng = random.Random(5)
    for step in range(10):
        stack.post("r", random_messages(rng, step))
    stream = open_stream(stack.client, "/threads/r/events")
    follower = Follower()
    snap = stream.next()
    assert snap is not None
    follower.take(snap)
    last = ""
    for step in range(10, 40):
        last = stack.post("r", random_messages(rng, step))
    middle = stack.state("r", min_version=last)["version"]
    _follow_until(stream, follower, middle)
    close(stream)
    held = follower.version
    assert held is not None
    for step in range(40, 70):
        last = stack.post("r", random_messages(rng, step))
    final = stack.state("r", min_version=last)["version"]
    # What the feed holds after the version held: every one must come, once, in order.
    feed = stack.settings.keyspace.thread("_/r").feed
    with redis.Redis.from_url(stack.settings.redis_url.get_secret_value()) as admin:
        kept = [i.decode() for i, _ in admin.xrange(feed, f"({held}", "+")]
    assert kept and kept[-1] == final
    resumed = open_stream(stack.client, "/threads/r/events", headers={"Last-Event-ID": held})
    got: list[str | None] = []
    while not got or got[-1] != final:
        event = resumed.next()
        assert event is not None and event.kind == "change", event
        follower.take(event)
        got.append(event.id)
    close(resumed)
    assert got == kept
    _check_each_version(stack, "r", follower)
    # ?after= is the same resume; the thread at its version: nothing until the next commit.
    again = open_stream(stack.client, f"/threads/r/events?after={final}")
    version = stack.post("r", [["user", "one more"]])
    event = again.next()
    close(again)
    assert event is not None and event.kind == "change" and event.data["prev"] == final
    assert event.id == stack.state("r", min_version=version)["version"]


def test_a_delete_sends_a_resync_snapshot(stack: Stack) -> None:
    stack.state("d", min_version=stack.post("d", [["user", "hi"]]))
    stream = open_stream(stack.client, "/threads/d/events")
    snap = stream.next()
    assert snap is not None and snap.data["exists"] is True and len(snap.data["messages"]) == 1
    assert stack.client.delete("/threads/d").status_code == 204
    resync = stream.next()
    close(stream)
    assert resync is not None and resync.kind == "snapshot"
    assert resync.data["reason"] == "resync" and resync.data["exists"] is False
    assert resync.data["messages"] == [] and resync.id == "0-0"


def test_heartbeats_are_sent_while_nothing_happens(stack: Stack) -> None:
    stream = open_stream(stack.client, "/threads/quiet/events")
    kinds = [stream.next(skip_comments=False) for _ in range(5)]
    close(stream)
    comments = [e for e in kinds if e is not None and e.kind == "comment"]
    assert len(comments) >= 3 and all(e.text == ": heartbeat" for e in comments)
