"""A drain round's read is not atomic: meta and log entries, then a script.

The fence read with the entries is what every later step is checked against: the
candidates script refuses to count an attempt (or write anything) once it moved, and a
commit refuses to land. These tests put a DELETE or another worker's commit between the
two steps, check that the fence the worker builds is the one the scripts build, and
that a cluster redirection keeps a thread's reads in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import Call, _pipelined, run_many, run_merged, text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.runtime.drain import batch as batch_reads
from threadfold.workers.storage import candidates, head, lua
from threadfold.workers.storage.meta import fence
from threadfold.workers.storage.store import Store


class NoWake:
    def wake(self, refs: object) -> None:
        pass


def _between_the_steps(monkeypatch: pytest.MonkeyPatch, act: Callable[[], Any]) -> list[Any]:
    """Run ``act`` once, after a read's plain commands and before its script call."""
    done: list[Any] = []
    started: list[bool] = []

    def patched(client: Any, calls: Any) -> Any:
        if calls and not started and calls[0].script is candidates.SCRIPT:
            started.append(True)  # (``act`` may read too: it runs unpatched)
            done.append(act())
        return run_merged(client, calls)

    monkeypatch.setattr(batch_reads, "run_merged", patched)
    return done


def test_a_delete_between_the_steps_leaves_nothing_behind(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(redis_url, failure_limit=1)
    store = store_for(settings)
    k = settings.keyspace.thread("_/z")
    Producer(store.client, settings, NoWake()).enqueue("z", [{"role": "user", "content": "a"}])
    store.client.xadd(k.log, {"d": b"\xff not msgpack"})  # poison, with a limit of 1
    done = _between_the_steps(monkeypatch, lambda: store.delete("_/z"))
    report = Drainer(store, settings).drain("_/z")
    assert done == [True]
    assert not report.quarantined and not report.failed
    assert store.client.exists(k.meta, k.log, k.pages) == 0  # no meta written back
    assert store.status("_/z") is None and store.read_state("_/z") is None
    Producer(store.client, settings, NoWake()).enqueue("z", [{"role": "user", "content": "b"}])
    Drainer(store, settings).drain("_/z")  # born again: not quarantined, not attempted
    assert [m["content"] for m in state_dump(store, "_/z")] == ["b"]


def test_a_commit_between_the_steps_counts_no_attempt(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    for n in range(3):
        producer.enqueue("w", [{"role": "user", "content": f"m{n}"}])
    other = Drainer(store_for(settings), settings)
    done = _between_the_steps(monkeypatch, lambda: other.drain("_/w").entries)
    report = Drainer(store, settings).drain("_/w")
    assert done == [3] and report.entries == 0  # the other worker applied them all
    status = store.status("_/w")
    assert status is not None and status.attempts == 0 and status.backlog == 0
    assert [m["content"] for m in state_dump(store, "_/w")] == ["m0", "m1", "m2"]


def test_the_fence_built_from_meta_is_the_one_the_scripts_build(redis_url: str) -> None:
    store: Store = store_for(make_settings(redis_url))
    source = lua.source("common") + "\nreturn fence_of(KEYS[1])"
    values = {"c": [None, "5-3", "0-0"], "g": [None, "0", "12"], "i": [None, "7"]}
    for n, (c, g, i) in enumerate(itertools.product(*values.values())):
        key = f"meta{n}"
        fields: dict[str | bytes, str] = {"n": "1"}
        fields.update((name, v) for name, v in zip("cgi", (c, g, i), strict=True) if v)
        store.client.hset(key, mapping=fields)  # type: ignore[arg-type]
        ((meta,),) = run_many(store.client, [Call(head.SCRIPT, [key], [])])  # as a read gets it
        assert fence(*meta[:3]) == text(store.client.eval(source, 1, key)), (c, g, i)


def test_reads_sent_to_the_wrong_cluster_node_are_followed_in_order(
    redis_cluster: RedisCluster,
) -> None:
    settings = make_settings(redis_cluster.url, cluster=True, key_prefix="mv", **WORKERS_ONLY)
    store = store_for(settings)
    client: Any = store.client
    Producer(client, settings, NoWake()).enqueue("m", [{"role": "user", "content": "a"}])
    k = settings.keyspace.thread("_/m")
    owner = client.get_node_from_key(k.log)
    other = next(n for n in client.get_primaries() if n.name != owner.name)
    calls, owners = batch_reads.read_calls(settings.keyspace, ["_/m"], 10, {}, cluster=True)
    replies = _pipelined(client.get_redis_connection(other), client, calls, [0, 1])
    batch = batch_reads.parse_reads(settings.keyspace, owners, replies, {}, 10)["_/m"]
    assert [e[0] for e in batch.entries] == [text(client.xrange(k.log)[0][0])]
    assert batch.mentioned is not None and len(batch.mentioned) == 4
