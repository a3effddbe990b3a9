"""One ingest script call carries many threads: grouping and per-thread answers."""

from __future__ import annotations

import random
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from tests.workers.harness import WORKERS_ONLY, make_settings, store_for
from threadfold.core.keys import Keyspace
from threadfold.testing import version_key
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.storage.ingest import MAX_THREADS_PER_INGEST, groups_of

KS = Keyspace(buckets=16)


@given(st.lists(st.integers(0, 5000), unique=True, max_size=700), st.booleans())
def test_groups_cover_every_thread_once_in_order_and_respect_slots(
    numbers: list[int], cluster: bool
) -> None:
    refs = [f"_/t{n}" for n in numbers]
    groups = groups_of(KS, refs, cluster)
    assert sorted(r for g in groups for r in g) == sorted(refs)
    assert all(0 < len(g) <= MAX_THREADS_PER_INGEST for g in groups)
    if cluster:
        assert all(len({KS.bucket_of(r) for r in g}) == 1 for g in groups)
    else:
        assert [r for g in groups for r in g] == refs


class Woken:
    def __init__(self) -> None:
        self.refs: list[str] = []

    def wake(self, refs: Sequence[str]) -> None:
        self.refs.extend(refs)


def test_a_bulk_over_hundreds_of_threads_answers_each_delta_in_order(redis_url: str) -> None:
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    woken = Woken()
    producer = Producer(store.client, settings, woken)
    rng = random.Random(8)
    deltas = []
    for i in range(900):
        thread = f"g{rng.randrange(450)}"
        delta_id = f"d{i}" if i % 7 == 0 else None
        deltas.append(Delta(thread, [{"role": "user", "content": str(i)}], delta_id))
    keyed = [d for d in deltas if d.delta_id]
    deltas += rng.sample(keyed, 40)  # retried within the same bulk
    results = producer.enqueue_many(deltas)
    assert len(results) == len(deltas)
    assert sorted(woken.refs) == sorted({f"_/{d.thread_id}" for d in deltas})  # each once
    last: dict[str, tuple[int, int]] = {}
    for delta, result in zip(deltas, results, strict=True):
        assert result.thread_id == delta.thread_id and result.accepted == 1
        if not result.duplicate:
            key = version_key(result.version)
            assert key > last.get(delta.thread_id, (0, 0))  # each thread's order kept
            last[delta.thread_id] = key
    firsts: dict[tuple[str, str | None], str] = {}
    for delta, result in zip(deltas, results, strict=True):
        if delta.delta_id:
            first = firsts.setdefault((delta.thread_id, delta.delta_id), result.version)
            # the first occurrence is stored; its retries answer its version
            assert result.duplicate == (result is not results[deltas.index(delta)])
            assert result.version == first
    assert sum(r.duplicate for r in results) == 40
    again = producer.enqueue_many(keyed)
    for delta, result in zip(keyed, again, strict=True):
        assert result.duplicate and result.version == firsts[(delta.thread_id, delta.delta_id)]
    for thread, key in last.items():
        status = store.status(f"_/{thread}")
        assert status is not None and version_key(status.last_enqueued) == key
