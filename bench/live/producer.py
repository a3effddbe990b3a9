"""The paced producer: ``rate`` deltas/s of the pipeline's mix (appends, updates,
removes) spread at random over the benchmarked threads, for ``seconds``, through the
bulk producer (one ``enqueue_many`` a tick, what fell due since the last), in a process
of its own so that its pacing does not wait on the subscribers' or the listener's.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any, Final

from bench.pipeline.workload import Mix
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings

#: Seconds between bulks by default: 50 deltas a bulk at 5,000/s.
TICK: Final = 0.01


@dataclass(frozen=True)
class Paced:
    """What the producer did: deltas sent, over how long, the worst lag behind its
    schedule, and its CPU."""

    sent: int
    seconds: float
    bulks: int
    max_behind_s: float
    cpu: float
    ops: dict[str, int]

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "rate": self.rate}


def run(settings: Settings, threads: list[str], *, rate: float, seconds: float,
        seed: int, go: Event, conn: Connection, tick: float = TICK) -> None:
    """Wait for ``go``, then send for ``seconds``; the :class:`Paced` on ``conn``."""
    app = make_celery(settings)
    client = sync_client(settings.redis_url.get_secret_value(), cluster=False, retries=0)
    producer = Producer(client, settings, CeleryWaker(app, settings.queue,
                                                       settings.refs_per_task))
    mix, rng = Mix(len(threads), seed), random.Random(seed)
    client.ping()
    conn.send("ready")
    go.wait()
    cpu0, start = time.process_time(), time.perf_counter()
    sent = bulks = 0
    behind = 0.0
    while (now := time.perf_counter()) - start < seconds:
        due = int((now - start) * rate) - sent
        if due > 0:
            planned = [mix.next(rng.randrange(len(threads))) for _ in range(due)]
            deltas = [Delta(threads[p.thread], [p.message]) for p in planned]
            mix.learn(planned, producer.enqueue_many(deltas))
            sent += due
            bulks += 1
            behind = max(behind, time.perf_counter() - start - sent / rate)
        time.sleep(max(0.0, tick - (time.perf_counter() - now)))
    done = time.perf_counter() - start
    conn.send(Paced(sent, done, bulks, behind, time.process_time() - cpu0, dict(mix.ops)))
    client.close()
    app.close()
