"""The in-process counters: a batch of observations counts as the same observations one by one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from core.keys import Keyspace
from workers.metrics import BATCH_BUCKETS, LAG_BUCKETS_MS, Metrics

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
    assert counts["lag_count"] == 5
