"""The pipeline benchmark's correctness path on tiny sizes: real Redis, real Celery workers.

No timing is asserted; what is checked is that every part runs, that the states it
produced are verified against the one-delta-at-a-time fold, and that the report and
the JSON are written.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
import redis

from bench.pipeline import latency, naive_app
from bench.pipeline import main as pipeline_bench
from bench.pipeline.commit_cost import CostConfig
from bench.pipeline.e2e import E2EConfig
from bench.pipeline.memory import MemoryConfig
from bench.pipeline.naive import NaiveConfig
from bench.pipeline.workload import APPEND, REMOVE, UPDATE, Mix, schedule
from tests.infra.redis_server import RedisServer
from threadfold.core.keys import DEFAULT_TENANT, Keyspace
from threadfold.core.results import Appended
from threadfold.workers.ingest.producer import Admit, Delta, Producer
from threadfold.workers.settings import Settings

TINY = pipeline_bench.Sizes(
    e2e=(E2EConfig(threads=12, per_thread=8, bulk=24, run=4, batch_size=5),),
    # One naive worker: with two, tasks of one thread can run out of order (the naive
    # design has no per-thread order), and the state check would fail by chance.
    naive=NaiveConfig(threads=3, per_thread=4, workers=1),
    floor_tasks=10,
    cost=CostConfig(lengths=(5, 40), deltas=30, batch_sizes=(7, 1000), rounds=1),
    latency_seconds=0.5,
    latency_shares=(0.05,),
    latency_runs=(4, 1),
    latency_per_call=(0.05,),
    memory=MemoryConfig(
        messages=120, human_messages=60, layouts=(30,), configs=("default",), cost_deltas=20
    ),
)


@pytest.fixture(scope="module")
def results() -> pipeline_bench.Results:
    return pipeline_bench.measure(TINY, lambda message: None)


def test_every_pipeline_state_equals_the_one_at_a_time_fold(
    results: pipeline_bench.Results,
) -> None:
    assert results.failed_checks == []
    assert all(r.check.ok for r in results.e2e)
    assert results.e2e[0].deltas == 12 * 8
    assert all(r.deltas > 0 and r.unresolved == 0 for r in results.latency)


def test_the_naive_baseline_folds_the_same_deltas_to_the_same_state(
    results: pipeline_bench.Results,
) -> None:
    assert results.naive.check.ok, results.naive.check.detail
    assert results.naive.failed == 0
    assert results.naive.floor is not None and results.naive.floor.tasks == 10


def test_every_part_is_measured_and_every_target_judged(results: pipeline_bench.Results) -> None:
    assert len(results.costs) == 3 * 2 * 2  # workloads x batch sizes x lengths
    assert len(results.memory) == 2  # ai and human, one layout, one config
    assert all(row.msgpack_mean > 0 and row.used_per_message > 0 for row in results.memory)
    assert len(results.targets) == 6
    report = pipeline_bench.render(results)
    assert "## Targets" in report and "| end to end sustained deltas/s" in report


def test_the_command_line_writes_json(
    results: pipeline_bench.Results,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(pipeline_bench, "measure", lambda sizes, progress: results)
    out = tmp_path / "pipeline.json"
    assert pipeline_bench.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["meta"]["mode"] == "quick"
    assert data["failed_checks"] == []
    assert len(data["targets"]) == 6
    assert "## End to end" in capsys.readouterr().out


def test_the_mix_updates_and_removes_only_ids_the_thread_holds() -> None:
    mix = Mix(3, seed=1, client_ids=1.0)
    live: dict[int, set[str]] = {0: set(), 1: set(), 2: set()}
    for t in [0, 1, 2] * 300:
        planned = mix.next(t)
        ident = planned.message["id"]
        if planned.op == APPEND:
            live[t].add(ident)
        else:
            assert ident in live[t]
            if planned.op == REMOVE:
                live[t].remove(ident)
    ops = Counter(mix.ops)
    assert ops[APPEND] > ops[UPDATE] > ops[REMOVE] > 0


def test_the_schedule_gives_every_thread_its_deltas_in_bulks() -> None:
    bulks = list(schedule(threads=7, per_thread=10, bulk=9, run=4, seed=1))
    assert all(len(b) == 9 for b in bulks[:-1])
    assert Counter(t for b in bulks for t in b) == {t: 10 for t in range(7)}


def test_a_naive_remove_of_an_unknown_id_is_counted_as_failed() -> None:
    with RedisServer() as server:
        client = server.client()
        assert naive_app.apply_delta(client, "t", [{"type": "human", "content": "a", "id": "1"}])
        assert not naive_app.apply_delta(
            client, "t", [{"type": "remove", "id": "2", "content": ""}]
        )
        assert int(client.get(naive_app.FAILED) or 0) == 1
        assert int(client.get(naive_app.DONE) or 0) == 2


def test_the_poller_dates_a_delta_by_the_poll_that_saw_it(redis_url: str) -> None:
    """An upper bound: a delta is dated by the poll that found its thread's cursor past
    its version, however early the commit was, and the record's hand-over is counted."""
    client = redis.Redis.from_url(redis_url)
    keys = Keyspace("lat", 4)
    meta = keys.thread("t1").meta
    client.hset(meta, mapping={"c": "1700-5", "t": 1})  # committed long ago
    poller = latency.Poller(client, keys)
    sent = time.time() - 0.250
    poller.add([("t1", (1700, 5), sent), ("t1", (1700, 6), sent)])
    assert poller.handoffs and poller.handoffs[0] >= 0.250
    poller.poll()
    assert len(poller.latencies) == 1  # 1700-6 is not reached yet
    assert poller.latencies[0][0] == sent and poller.latencies[0][1] >= 0.250
    client.hset(meta, "c", "1700-9")
    poller.poll()
    assert poller.latencies[1][1] >= 0.250 and not poller.pending
    client.close()


class _Inbox:
    def __init__(self) -> None:
        self.sent: list[object] = []

    def send(self, records: object) -> None:
        self.sent.append(records)


class NoWaker:
    def wake(self, refs: Sequence[str]) -> None:
        pass


class _Counting(Producer):
    """A producer that enqueues for real and remembers each call's size."""

    sizes: list[int]

    def enqueue_many(
        self,
        deltas: Sequence[Delta],
        path: str = "deltas",
        *,
        tenant: str = DEFAULT_TENANT,
        admit: Admit | None = None,
    ) -> list[Appended]:
        self.sizes.append(len(deltas))
        return super().enqueue_many(deltas, path, tenant=tenant, admit=admit)


def test_the_pacer_sends_what_fell_due_once_a_tick(redis_url: str) -> None:
    """At 2,000/s with 20 ms ticks a bulk carries ~40 deltas (10 per thread at run=10):
    a pacer that sends the moment one delta falls due makes one-delta bulks, every one
    its own wake-up task, and measures Celery's per-task cost instead of the pipeline."""
    settings = Settings(redis_url=redis_url, key_prefix="pace")
    client = redis.Redis.from_url(redis_url)
    counting = _Counting(client, settings, NoWaker())
    counting.sizes = []
    inbox = _Inbox()
    cfg = latency.LatencyConfig(rate=2000, seconds=0.5, threads=50, tick=0.02, run=10)
    sent, _ = latency._pace(counting, cfg, Mix(50, seed=3), inbox, "pace")
    assert sum(counting.sizes) == sent.count >= 800
    assert len(counting.sizes) <= 0.5 / 0.02 + 2
    assert sorted(counting.sizes)[len(counting.sizes) // 2] >= 30
    client.close()
