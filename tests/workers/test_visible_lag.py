"""The enqueue-to-visible lag a commit records is never negative.

An entry's id carries the ms Redis stamped it with, and stream ids never go back: after
Redis's clock jumps backwards, new entries keep ids ahead of the clock, and a commit
(timed by that clock) sees them "from the future". Their lag counts as 0: a negative one
would lower ``visible_lag_ms_sum``, a counter Prometheus takes for a reset when it falls.
"""

from __future__ import annotations

import math

from threadfold.core.keys import Keyspace
from threadfold.workers.metrics import LAG_BUCKETS_MS, Metrics
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.drain import Decoded, Drainer, lag_ms
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

NOW_MS = 1_700_000_000_000


def test_an_entry_stamped_after_its_commit_has_a_lag_of_zero() -> None:
    assert lag_ms(f"{NOW_MS + 5_000}-0", NOW_MS) == 0
    assert lag_ms(f"{NOW_MS - 7}-3", NOW_MS) == 7


def test_a_commit_after_a_backwards_clock_jump_never_lowers_the_lag_sum() -> None:
    settings = Settings()
    # Never connected: the drainer records into its own counters, flushed never (inf).
    store = Store(sync_client("redis://127.0.0.1:1/0", cluster=False), settings.keyspace)
    metrics = Metrics(Keyspace(), "worker", every=math.inf)
    drainer = Drainer(store, settings, metrics=metrics)
    ids = [f"{NOW_MS - 40}-0", f"{NOW_MS + 60_000}-0", f"{NOW_MS + 1}-1"]
    decoded: Decoded = [(entry, []) for entry in ids]

    drainer._record(decoded, NOW_MS)

    counts = metrics._take()
    assert counts["visible_lag_ms_sum"] == 40  # not 40 - 60,000 - 1
    first = f"visible_lag_ms_bucket:{LAG_BUCKETS_MS[0]}"
    assert counts[first] == 2  # the two from the future, at 0
    assert counts["visible_lag_ms_bucket:50"] == 1
    assert counts["entries_applied"] == 3
