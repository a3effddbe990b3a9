"""The counters: a batch of observations counts as the same observations one by one, and
flushes only ever add to the fleet-wide totals in Redis (standalone and Cluster)."""

from __future__ import annotations

import asyncio
import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer
from threadfold.api import metrics as prom
from threadfold.core.errors import RedisFull
from threadfold.core.keys import Keyspace
from threadfold.workers import metrics as fleet_metrics
from threadfold.workers.metrics import BATCH_BUCKETS, LAG_BUCKETS_MS, Metrics, process_name
from threadfold.workers.redisio.client import SyncRedis, async_client, sync_client, text

values = st.lists(
    st.one_of(st.integers(-5, 20_000), st.sampled_from([*LAG_BUCKETS_MS, *BATCH_BUCKETS])),
    max_size=60,
)


@given(values, st.sampled_from(["visible_lag_ms", "batch_entries|queue=x"]))
def test_observe_many_equals_one_by_one(observed: list[int], name: str) -> None:
    one, many = Metrics(Keyspace(), "test"), Metrics(Keyspace(), "test")
    for value in observed:
        one.observe(name, value, LAG_BUCKETS_MS)
    many.observe_many(name, observed, LAG_BUCKETS_MS)
    assert many._take() == one._take()


def test_bucket_edges_are_inclusive() -> None:
    m = Metrics(Keyspace(), "test")
    m.observe_many("lag", [1, 2, 3, 10_000, 10_001], LAG_BUCKETS_MS)
    counts = m._take()
    assert counts["lag_bucket:1"] == 1
    assert counts["lag_bucket:2"] == 1
    assert counts["lag_bucket:5"] == 1
    assert counts["lag_bucket:10000"] == 1
    assert counts["lag_bucket:+Inf"] == 1
    assert counts["lag_sum"] == 1 + 2 + 3 + 10_000 + 10_001


def _totals(client: SyncRedis, keyspace: Keyspace) -> dict[str, float]:
    raw = client.hgetall(keyspace.metrics_totals)
    return {text(k): float(v) for k, v in raw.items()}


def _live(client: SyncRedis, keyspace: Keyspace) -> set[str]:
    return {text(p) for p in client.zrange(keyspace.metrics_procs, 0, -1)}


def test_flushes_of_several_processes_add_up_in_one_hash(redis_url: str) -> None:
    keyspace = Keyspace("mx", 4)
    client = sync_client(redis_url, cluster=False)
    try:
        worker, api = Metrics(keyspace, "worker"), Metrics(keyspace, "api")
        worker.add("commits", 2)
        worker.observe("visible_lag_ms", 1.5, LAG_BUCKETS_MS)
        api.add("http_requests|route=post_delta|status=202")
        worker.flush(client)
        api.flush(client)
        # An integral sum after a fractional one: HINCRBY would refuse the field
        # ("hash value is not an integer") and lose the whole flush.
        worker.observe("visible_lag_ms", 2, LAG_BUCKETS_MS)
        worker.add("commits")
        worker.flush(client)
        assert _totals(client, keyspace) == {
            "commits": 3,
            "visible_lag_ms_bucket:2": 2,
            "visible_lag_ms_sum": 3.5,
            "http_requests|route=post_delta|status=202": 1,
        }
        assert _live(client, keyspace) == {process_name("worker"), process_name("api")}
        worker.close(client)  # a graceful exit leaves the live processes at once
        assert _live(client, keyspace) == {process_name("api")}
        assert _totals(client, keyspace)["commits"] == 3  # and takes no count with it
    finally:
        client.close()


def test_a_non_finite_amount_is_dropped_not_the_whole_flush(redis_url: str) -> None:
    keyspace = Keyspace("mx", 4)
    client = sync_client(redis_url, cluster=False)
    try:
        m = Metrics(keyspace, "worker")
        m.observe("visible_lag_ms", math.inf, LAG_BUCKETS_MS)
        m.add("commits")
        m.flush(client)
        assert _totals(client, keyspace) == {"commits": 1, "visible_lag_ms_bucket:+Inf": 1}
    finally:
        client.close()


def test_a_flush_that_cannot_reach_redis_keeps_its_counts_for_the_next(
    redis_server: RedisServer,
) -> None:
    keyspace = Keyspace("mx", 4)
    client = sync_client(redis_server.url, cluster=False, retries=0)
    try:
        m = Metrics(keyspace, "api")
        m.add("http_requests|route=post_delta|status=503", 3)
        redis_server.stop()
        with pytest.raises(RedisConnectionError):
            m.flush(client)
        m.add("http_requests|route=post_delta|status=503", 2)
        redis_server.restart()
        m.flush(client)
        assert _totals(client, keyspace) == {"http_requests|route=post_delta|status=503": 5}
    finally:
        client.close()


def test_a_flush_refused_by_a_full_redis_keeps_its_counts_and_writes_nothing(
    redis_server: RedisServer,
) -> None:
    keyspace = Keyspace("mx", 4)
    client = sync_client(redis_server.url, cluster=False, retries=0)
    admin = redis_server.client()
    try:
        m = Metrics(keyspace, "worker")
        m.add("commits", 2)
        m.observe("visible_lag_ms", 3, LAG_BUCKETS_MS)
        admin.config_set("maxmemory", 1)  # any write that may grow memory is refused
        with pytest.raises(RedisFull):  # redisio raises the tree's, not redis-py's
            m.flush(client)
        assert admin.dbsize() == 0  # not one field of it
        admin.config_set("maxmemory", 0)
        m.add("commits")
        m.flush(client)
        assert _totals(client, keyspace) == {
            "commits": 3,
            "visible_lag_ms_bucket:5": 1,
            "visible_lag_ms_sum": 3,
        }
    finally:
        client.close()


def test_on_a_cluster_flushes_and_the_scrape_read_one_slot(redis_cluster: RedisCluster) -> None:
    cluster = redis_cluster
    keyspace = Keyspace("cl", 8)
    client = sync_client(cluster.url, cluster=True)
    try:
        m = Metrics(keyspace, "worker")
        m.add("entries_applied", 7)
        m.observe_many("batch_entries", [3, 4], BATCH_BUCKETS)
        m.flush(client)

        async def scrape() -> str:
            aclient = async_client(cluster.url, cluster=True)
            try:
                am = Metrics(keyspace, "api")
                am.add("deltas_ingested", 7)
                await am.aflush(aclient)
                totals = await fleet_metrics.collect(aclient, keyspace)
                return prom.render(totals, await fleet_metrics.gauges(aclient, keyspace))
            finally:
                await aclient.aclose()

        body = asyncio.run(scrape())
    finally:
        client.close()
    assert "threadfold_entries_applied_total 7.0" in body
    assert "threadfold_deltas_ingested_total 7.0" in body
    assert 'threadfold_batch_entries_bucket{le="5"} 2.0' in body
    assert "threadfold_batch_entries_count 2.0" in body
    assert 'threadfold_processes{role="worker"} 1.0' in body
    assert 'threadfold_processes{role="api"} 1.0' in body


@given(st.lists(st.tuples(st.integers(1, 3_000), st.lists(st.integers(0, 20_000), max_size=5)),
                max_size=30))
def test_commits_counted_at_once_equal_commits_counted_one_by_one(
    commits: list[tuple[int, list[int]]],
) -> None:
    one, many = Metrics(Keyspace(), "test"), Metrics(Keyspace(), "test")
    for entries, lags in commits:
        fleet_metrics.record_commit(one, entries, lags)
    sizes = Counter(entries for entries, _ in commits)
    fleet_metrics.record_commits(many, sizes, Counter(lag for _, lags in commits for lag in lags))
    assert many._take() == one._take()
