"""The feed reader of an API process across faults: its Pub/Sub connection killed while
versions commit, and Redis restarted under it. Subscribers keep their streams, miss
nothing, and end equal to ``GET state``."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import redis

from tests.api.sse_reader import Follower, close, open_stream
from tests.api.test_events import Stack, _follow_until
from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker, store_for
from threadfold.api.feed import HUB_CLIENT_NAME
from threadfold.workers.runtime.drain import Drainer


def _kill_hub_connections(admin: redis.Redis, until: threading.Event) -> None:
    while not until.is_set():
        for c in admin.client_list():
            if c.get("name") == HUB_CLIENT_NAME:
                admin.client_kill_filter(_id=c["id"])
        time.sleep(0.005)


def test_events_committed_while_the_connection_is_down_are_still_delivered(
    redis_url: str, tmp_path: Path
) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    api, url = start_api(settings, tmp_path, THREADFOLD_SSE_HEARTBEAT_SECONDS="0.3")
    worker = start_worker(settings, "faults", tmp_path)
    stack = Stack(url, settings, [api, worker])
    admin = redis.Redis.from_url(redis_url)
    try:
        streams = [open_stream(stack.client, "/threads/k/events") for _ in range(3)]
        followers = [Follower() for _ in streams]
        for s, f in zip(streams, followers, strict=True):
            first = s.next()
            assert first is not None
            f.take(first)
        stop = threading.Event()
        killer = threading.Thread(target=_kill_hub_connections, args=(admin, stop))
        killer.start()
        try:  # commits land while the hub's connection is down, again and again
            for step in range(8):
                stack.state("k", min_version=stack.post("k", [["user", f"k{step}"]]))
        finally:
            stop.set()
            killer.join()
        final = stack.state("k")["version"]
        for s, f in zip(streams, followers, strict=True):
            _follow_until(s, f, final)  # through changes and, after a reconnect, a re-read
            close(s)
            assert f.seen[-1][1] == stack.state("k")["messages"]
            assert [m["content"] for m in f.seen[-1][1]] == [f"k{i}" for i in range(8)]
    finally:
        admin.close()
        stack.close()


def test_the_reader_survives_a_redis_restart(tmp_path: Path) -> None:
    with RedisServer(appendonly=True, appendfsync="always") as server:
        settings = make_settings(server.url, retention_seconds=3600)
        api, url = start_api(settings, tmp_path, THREADFOLD_SSE_HEARTBEAT_SECONDS="0.3")
        worker = start_worker(settings, "restart", tmp_path)
        stack = Stack(url, settings, [api, worker])
        try:
            stack.state("z", min_version=stack.post("z", [["user", "before"]]))
            stream = open_stream(stack.client, "/threads/z/events")
            follower = Follower()
            first = stream.next()
            assert first is not None and first.data["exists"]
            follower.take(first)
            server.restart()
            version = ""
            deadline = time.monotonic() + 30
            while not version:  # the API answers 503 until it reconnects
                try:
                    version = stack.post("z", [["user", "after"]])
                except AssertionError:
                    assert time.monotonic() < deadline
                    time.sleep(0.2)
            final = stack.state("z", min_version=version)["version"]
            _follow_until(stream, follower, final)
            close(stream)
            assert [m["content"] for m in follower.seen[-1][1]] == ["before", "after"]
        finally:
            stack.close()


def test_a_graceful_stop_ends_every_stream_with_shutting_down(
    redis_url: str, tmp_path: Path
) -> None:
    settings = make_settings(redis_url)
    api, url = start_api(settings, tmp_path, THREADFOLD_SSE_HEARTBEAT_SECONDS="0.3")
    stack = Stack(url, settings, [api])
    try:
        streams = [open_stream(stack.client, f"/threads/q{i}/events") for i in range(3)]
        for s in streams:
            assert s.next() is not None
        api.send_signal(signal.SIGTERM)  # uvicorn waits for open responses: they end
        api.wait_for_exit(10)
        for s in streams:
            last = s.next()
            assert last is not None and last.kind == "error", last
            assert last.data["error"]["code"] == "shutting_down"
            assert s.next() is None  # and the stream ended
    finally:
        stack.close()


def test_one_connection_to_one_node_hears_threads_on_every_node_of_a_cluster(
    redis_cluster: RedisCluster, redis_url: str, tmp_path: Path
) -> None:
    """A script's PUBLISH on a cluster reaches every node: the hub, connected to the
    URL's node only, follows threads whose slots live on the other masters."""
    settings = make_settings(
        redis_cluster.url, cluster=True, key_prefix="sse", broker_url=redis_url
    )
    api, url = start_api(settings, tmp_path, THREADFOLD_SSE_HEARTBEAT_SECONDS="0.3")
    stack = Stack(url, settings, [api])
    names = [f"n{i}" for i in range(12)]  # over many buckets, so over every node
    admin = redis_cluster.client()
    feeds = [settings.keyspace.thread(f"_/{n}").feed for n in names]
    nodes = {admin.get_node_from_key(feed).name for feed in feeds}  # type: ignore[no-untyped-call]
    try:
        streams = {n: open_stream(stack.client, f"/threads/{n}/events") for n in names}
        for s in streams.values():
            assert s.next() is not None
        for n in names:
            stack.post(n, [["user", f"to {n}"]])
        drainer = Drainer(store_for(settings), settings)
        drainer.drain_many([f"_/{n}" for n in names])
        for n, s in streams.items():
            change = s.next()
            close(s)
            assert change is not None and change.kind == "change", (n, change)
            assert change.data["upserts"][0]["message"]["content"] == f"to {n}"
        assert len(nodes) == 3  # the threads live on every master
    finally:
        stack.close()
