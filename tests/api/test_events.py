"""``GET /threads/{id}/events`` against real processes: a redis-server, an API process,
a Celery worker. Subscribers rebuild the state from the events (the apply rule) and
must equal ``GET state`` at every version they see."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.api.sse_reader import Follower, close, open_stream
from tests.infra.processes import wait_until
from tests.workers.harness import make_settings, start_api, start_worker
from tests.workers.produce import random_messages
from threadfold.api.feed import HUB_CLIENT_NAME
from threadfold.workers.ops.processes import ManagedProcess
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
        if step % 10 == 9:  # several commits whatever the batching: wait for each tenth
            stack.state("t", min_version=last)
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


def _from_0_0() -> Follower:
    """A follower that took a deleted event: the empty thread at 0-0."""
    follower = Follower()
    follower.version = "0-0"
    return follower


def test_a_delete_sends_deleted_then_changes_on_0_0(stack: Stack) -> None:
    stack.state("d", min_version=stack.post("d", [["user", "hi"]]))
    stream = open_stream(stack.client, "/threads/d/events")
    snap = stream.next()
    assert snap is not None and snap.data["exists"] is True and len(snap.data["messages"]) == 1
    assert snap.id is not None
    assert stack.client.delete("/threads/d").status_code == 204
    gone = stream.next()
    assert gone is not None and gone.kind == "deleted", gone
    assert gone.data == {"thread_id": "d", "version": "0-0", "reason": "deleted"}
    assert gone.id == "0-0" and '"reason":"deleted"' in gone.text
    # Resumed from the deleted event's id while the thread is absent: nothing to send
    # (the follower holds the empty thread); from an id before it: a snapshot of nothing.
    resumed = open_stream(stack.client, "/threads/d/events", headers={"Last-Event-ID": "0-0"})
    before = open_stream(stack.client, "/threads/d/events", headers={"Last-Event-ID": snap.id})
    gap = before.next()
    assert gap is not None and gap.kind == "snapshot" and gap.id == "0-0", gap
    assert (gap.data["reason"], gap.data["exists"], gap.data["messages"]) == (
        "resume_gap", False, []
    )
    version = stack.state("d", min_version=stack.post("d", [["user", "again"]]))["version"]
    for s in (stream, resumed, before):
        follower = _from_0_0()
        change = s.next()
        close(s)
        assert change is not None and change.kind == "change", change
        assert change.data["prev"] == "0-0" and change.id == version
        follower.take(change)
        assert follower.seen[-1][1] == stack.state("d")["messages"]
        assert [m["content"] for m in follower.seen[-1][1]] == ["again"]
    # Resumed from 0-0 once the thread was written again: the chain from 0-0, no snapshot.
    later = open_stream(stack.client, "/threads/d/events", headers={"Last-Event-ID": "0-0"})
    first = later.next()
    close(later)
    assert first is not None and first.kind == "change" and first.id == version, first
    assert first.data["prev"] == "0-0"


def test_heartbeats_are_sent_while_nothing_happens(stack: Stack) -> None:
    stream = open_stream(stack.client, "/threads/quiet/events")
    kinds = [stream.next(skip_comments=False) for _ in range(5)]
    close(stream)
    comments = [e for e in kinds if e is not None and e.kind == "comment"]
    assert len(comments) >= 3 and all(e.text == ": heartbeat" for e in comments)


def test_a_trimmed_feed_resumes_with_a_snapshot(redis_url: str, tmp_path: Path) -> None:
    stack = _stack(redis_url, tmp_path, settings={"feed_max_events": 2, "batch_size": 1})
    try:
        first = stack.state("g", min_version=stack.post("g", [["user", "0"]]))["version"]
        last = ""
        for step in range(1, 12):  # each its own version: the feed keeps the last few
            last = stack.post("g", [["user", str(step)]])
            stack.state("g", min_version=last)
        stream = open_stream(stack.client, "/threads/g/events", headers={"Last-Event-ID": first})
        snap = stream.next()
        close(stream)
        assert snap is not None and snap.kind == "snapshot"
        assert snap.data["reason"] == "resume_gap" and snap.data["exists"] is True
        assert snap.data["messages"] == stack.state("g")["messages"]
        assert [m["content"] for m in snap.data["messages"]] == [str(i) for i in range(12)]
    finally:
        stack.close()


def test_requests_are_checked_like_get_state(redis_url: str, tmp_path: Path) -> None:
    stack = _stack(redis_url, tmp_path, worker=False)
    try:
        get = stack.client.get
        bad = get("/threads/t/events?after=12")
        assert bad.status_code == 400 and bad.json()["error"]["field"] == "after"
        assert "<ms>-<seq>" in bad.json()["error"]["message"]
        header = get("/threads/t/events", headers={"Last-Event-ID": "x-1"})
        assert header.status_code == 400
        assert header.json()["error"]["field"] == "Last-Event-ID"
        both = get("/threads/t/events?after=1-0", headers={"Last-Event-ID": "2-0"})
        assert both.status_code == 400 and both.json()["error"]["field"] == "after"
        assert "Last-Event-ID" in both.json()["error"]["message"]
        unknown = get("/threads/t/events?limit=3")
        assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "limit"
        fmt = get("/threads/t/events?format=xml")
        assert fmt.status_code == 400 and fmt.json()["error"]["field"] == "format"
        name = get("/threads/" + "x" * 300 + "/events")
        assert name.status_code == 422 and name.json()["error"]["field"] == "thread_id"
        # The same version both ways is one resume, not a conflict.
        same = open_stream(
            stack.client, "/threads/t/events?after=1-0", headers={"Last-Event-ID": "01-0"}
        )
        assert same.response.status_code == 200
        close(same)
        head = stack.client.head("/threads/t/events")  # answered, not streamed for ever
        assert head.status_code == 200
        assert head.headers["content-type"].startswith("text/event-stream")
        # An empty Last-Event-ID is no id: a stream from a snapshot.
        empty = open_stream(stack.client, "/threads/t/events", headers={"Last-Event-ID": ""})
        snap = empty.next()
        close(empty)
        assert snap is not None and snap.kind == "snapshot" and snap.data["reason"] == "start"
    finally:
        stack.close()


TOKEN_A, TOKEN_B = "key-a-0123456789abcdef", "key-b-0123456789abcdef"


def test_a_key_watches_its_own_tenants_thread_only(redis_url: str, tmp_path: Path) -> None:
    keys = f'{{"{TOKEN_A}": "ta", "{TOKEN_B}": "tb"}}'
    stack = _stack(redis_url, tmp_path, THREADFOLD_API_KEYS=keys)
    a = {"Authorization": f"Bearer {TOKEN_A}"}
    b = {"Authorization": f"Bearer {TOKEN_B}"}
    try:
        assert stack.client.get("/threads/x/events").status_code == 401
        wrong = stack.client.get("/threads/x/events", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        stack.post("x", [["user", "secret of a"]], headers=a)
        watch_a = open_stream(stack.client, "/threads/x/events", headers=a)
        watch_b = open_stream(stack.client, "/threads/x/events", headers=b)
        snap_b = watch_b.next()
        assert snap_b is not None and snap_b.data["exists"] is False
        stack.post("x", [["user", "more of a"]], headers=a)
        stack.post("x", [["user", "of b"]], headers=b)
        change_b = watch_b.next()
        seen_a: list[str] = []
        while "more of a" not in seen_a:
            event = watch_a.next()
            assert event is not None
            if event.kind == "snapshot":
                seen_a += [m["content"] for m in event.data["messages"]]
            else:
                seen_a += [u["message"]["content"] for u in event.data["upserts"]]
        close(watch_a)
        close(watch_b)
        assert change_b is not None and change_b.kind == "change"
        assert [u["message"]["content"] for u in change_b.data["upserts"]] == ["of b"]
        assert "of b" not in seen_a and "secret of a" in seen_a
    finally:
        stack.close()


def test_above_the_cap_a_subscriber_is_refused_with_retry_after(
    redis_url: str, tmp_path: Path
) -> None:
    stack = _stack(redis_url, tmp_path, worker=False, THREADFOLD_SSE_MAX_SUBSCRIBERS="2")
    try:
        held = [open_stream(stack.client, f"/threads/c{i}/events") for i in range(2)]
        assert all(s.next() is not None for s in held)  # both in
        refused = stack.client.get("/threads/c9/events")
        assert refused.status_code == 503
        assert refused.json()["error"]["code"] == "too_many_subscribers"
        assert int(refused.headers["retry-after"]) > 0
        close(held.pop())
        wait_until(lambda: _opens(stack, "/threads/c9/events"), 10, message="slot not freed")
        for s in held:
            close(s)
    finally:
        stack.close()


def _opens(stack: Stack, path: str) -> bool:
    stream = open_stream(stack.client, path)
    close(stream)
    return stream.response.status_code == 200


def _raw_subscriber(url: str, path: str) -> socket.socket:
    """A subscriber that sends its request and then reads nothing: a tiny receive buffer,
    so the server's writes block soon."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return sock


def _read_to_end(sock: socket.socket, deadline: float) -> bytes:
    sock.settimeout(1.0)
    got = bytearray()
    while time.monotonic() < deadline and not got.endswith(b"0\r\n\r\n"):
        try:
            chunk = sock.recv(1 << 20)
        except TimeoutError:
            continue
        if not chunk:
            break
        got += chunk
    return bytes(got)


def test_a_slow_reader_is_dropped_while_another_keeps_up(redis_url: str, tmp_path: Path) -> None:
    stack = _stack(redis_url, tmp_path, THREADFOLD_SSE_QUEUE_EVENTS="3")
    url = str(stack.client.base_url).rstrip("/")
    try:
        fast = open_stream(stack.client, "/threads/s/events")
        follower = Follower()
        first = fast.next()
        assert first is not None
        follower.take(first)
        slow = _raw_subscriber(url, "/threads/s/events")
        big = "x" * 200_000
        last = ""
        for step in range(40):  # ~8 MB: more than the kernel's buffers hold
            last = stack.post("s", [{"role": "user", "content": f"{step}{big}", "id": f"m{step}"}])
            stack.state("s", min_version=last)
        final = stack.state("s")["version"]
        _follow_until(fast, follower, final)
        assert len(follower.seen) >= 40 and follower.seen[-1][1] == stack.state("s")["messages"]
        got = _read_to_end(slow, time.monotonic() + 20)
        slow.close()
        close(fast)
        assert b"event: snapshot" in got
        tail = got[got.rindex(b"event: ") :]
        assert tail.startswith(b"event: error\ndata: "), tail[:200]
        assert b'"code":"too_slow"' in tail and got.endswith(b"0\r\n\r\n")
        assert got.count(b"event: change") < 40
        metrics = stack.client.get("/metrics").text
        assert 'threadfold_sse_subscribers_dropped_total{reason="too_slow"} 1.0' in metrics
    finally:
        stack.close()


def _feed_clients(admin: redis.Redis) -> list[dict[str, Any]]:
    return [c for c in admin.client_list() if c.get("name") == HUB_CLIENT_NAME]


def test_many_subscribers_share_one_pubsub_connection(stack: Stack) -> None:
    admin = redis.Redis.from_url(stack.settings.redis_url.get_secret_value())
    streams = [open_stream(stack.client, f"/threads/m{i % 10}/events") for i in range(50)]
    try:
        for s in streams:
            snap = s.next()
            assert snap is not None and snap.kind == "snapshot"
        [hub] = _feed_clients(admin)
        assert int(hub["sub"]) == 10  # one channel per watched thread, not per subscriber
        versions = {i: stack.post(f"m{i}", [["user", f"to m{i}"]]) for i in range(10)}
        for n, s in enumerate(streams):
            change = s.next()
            assert change is not None and change.kind == "change"
            assert change.data["upserts"][0]["message"]["content"] == f"to m{n % 10}"
            assert change.id == stack.state(f"m{n % 10}", min_version=versions[n % 10])["version"]
        assert len(_feed_clients(admin)) == 1
        clients = admin.client_list()
        # No connection per subscriber: one Pub/Sub connection in all, and far fewer
        # connections than subscribers (the API's pool, the worker's, this test's).
        assert [c["name"] for c in clients if int(c["sub"])] == [HUB_CLIENT_NAME]
        assert len(clients) < 25, [c["name"] for c in clients]
        for s in streams:
            close(s)
        # The last subscriber of a thread leaving unsubscribes its channel.
        wait_until(lambda: _feed_clients(admin)[0]["sub"] == "0", 10, message="still subscribed")
    finally:
        for s in streams:
            close(s)
        admin.close()


def _metric(stack: Stack, line_start: str) -> float:
    text = stack.client.get("/metrics").text
    [line] = [line for line in text.splitlines() if line.startswith(line_start + " ")]
    return float(line.split()[-1])


def test_metrics_count_subscribers_and_events(stack: Stack) -> None:
    assert _metric(stack, "threadfold_sse_subscribers") == 0
    streams = [open_stream(stack.client, "/threads/g1/events") for _ in range(3)]
    for s in streams:
        assert s.next() is not None
    wait_until(lambda: _metric(stack, "threadfold_sse_subscribers") == 3, 10)
    stack.post("g1", [["user", "x"]])
    for s in streams:
        assert s.next() is not None
        close(s)
    wait_until(lambda: _metric(stack, "threadfold_sse_subscribers") == 0, 10)
    assert _metric(stack, "threadfold_sse_events_sent_total") >= 6  # 3 snapshots, 3 changes


def test_the_servers_read_timeouts_do_not_cut_a_stream(redis_url: str, tmp_path: Path) -> None:
    """The guard's head and body timeouts (api/guard.py) are for reading a request: a
    stream that lasts longer than both is still served."""
    stack = _stack(
        redis_url,
        tmp_path,
        THREADFOLD_HEADER_TIMEOUT_SECONDS="0.5",
        THREADFOLD_BODY_TIMEOUT_SECONDS="0.5",
    )
    try:
        stream = open_stream(stack.client, "/threads/long/events")
        assert stream.next() is not None
        time.sleep(2.5)  # five times either timeout
        version = stack.post("long", [["user", "still here"]])
        change = stream.next()
        close(stream)
        assert change is not None and change.kind == "change"
        assert change.id == stack.state("long", min_version=version)["version"]
    finally:
        stack.close()
