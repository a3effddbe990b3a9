"""What ``appendfsync always`` costs the local stack, against ``everysec``.

Run ``python -m bench.fsync_bench [--rounds N]``. Each round starts, for each policy in
turn, what ``threadfold up`` starts (a redis-server with ``appendonly yes`` and its data
on this machine's disk, one Celery worker of concurrency 2, the API), then measures:

* HTTP: single-delta ``POST /threads/{id}/deltas`` from 16 concurrent clients over 100
  threads, acknowledged per second, then applied (drained) per second;
* bulk: the Python producer's ``enqueue_many``, 1000 deltas per call over 200 threads,
  applied per second.

Rounds alternate the policies so that a shared machine's load falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from bench.common.tables import table
from bench.common.wait import wait_drained
from bench.pipeline.services import ROOT, start_worker
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.ops.processes import (
    API_ARGV,
    AppendFsync,
    ManagedProcess,
    RedisServer,
    api_url,
    free_port,
    http_ok,
    start_service,
    wait_until,
)
from threadfold.workers.redisio.client import sync_client
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

HTTP_DELTAS, HTTP_CLIENTS, HTTP_THREADS = 2000, 16, 100
BULK_DELTAS, BULK_SIZE, BULK_THREADS = 20_000, 1000, 200


@contextmanager
def local_stack(policy: AppendFsync, logs: Path) -> Iterator[tuple[Settings, str, Store]]:
    with RedisServer(appendonly=True, appendfsync=policy) as server:
        settings = Settings(redis_url=server.url)
        worker = start_worker(settings, "w", logs, concurrency=2)
        api, url = _start_api(settings, logs)
        store = Store(sync_client(server.url, cluster=False), settings.keyspace)
        try:
            yield settings, url, store
        finally:
            store.client.close()
            api.kill()
            worker.kill()


def _start_api(settings: Settings, logs: Path) -> tuple[ManagedProcess, str]:
    """An API process on a free port, once it answers /healthz."""
    port = free_port()
    api = start_service(API_ARGV, settings, logs / "api.log", {"THREADFOLD_PORT": str(port)}, ROOT)
    url = api_url(port)
    try:
        wait_until(lambda: http_ok(f"{url}/healthz"), 30, message="API did not start")
    except BaseException:
        api.kill()
        raise
    return api, url


async def _post_all(url: str, prefix: str) -> float:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(HTTP_DELTAS):
        queue.put_nowait(i)

    async def client(http: httpx.AsyncClient) -> None:
        while not queue.empty():
            i = queue.get_nowait()
            body = {"messages": [{"role": "user", "content": f"message {i}"}]}
            answer = await http.post(f"{url}/threads/{prefix}{i % HTTP_THREADS}/deltas", json=body)
            answer.raise_for_status()

    started = time.perf_counter()
    async with httpx.AsyncClient(timeout=30) as http:
        await asyncio.gather(*(client(http) for _ in range(HTTP_CLIENTS)))
    return time.perf_counter() - started


def measure(policy: AppendFsync, logs: Path, round_: int) -> dict[str, float]:
    with local_stack(policy, logs) as (settings, url, store):
        prefix = f"h{round_}-"
        started = time.perf_counter()
        acked = asyncio.run(_post_all(url, prefix))
        wait_drained(store, [f"_/{prefix}{t}" for t in range(HTTP_THREADS)], timeout=300)
        applied = time.perf_counter() - started

        app = make_celery(settings)
        producer = Producer(store.client, settings, CeleryWaker(app, settings.queue))
        refs = [f"b{round_}-{t}" for t in range(BULK_THREADS)]
        started = time.perf_counter()
        for start in range(0, BULK_DELTAS, BULK_SIZE):
            producer.enqueue_many(
                [Delta(refs[i % BULK_THREADS], [f"m{i}"]) for i in range(start, start + BULK_SIZE)]
            )
        wait_drained(store, [f"_/{r}" for r in refs], timeout=300)
        bulk = time.perf_counter() - started
        app.close()
    return {
        "http acked/s": HTTP_DELTAS / acked,
        "http applied/s": HTTP_DELTAS / applied,
        "bulk applied/s": BULK_DELTAS / bulk,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"everysec": [], "always": []}
    with tempfile.TemporaryDirectory(prefix="threadfold-fsync-") as logs:
        for round_ in range(args.rounds):
            order: list[AppendFsync] = ["everysec", "always"] if round_ % 2 == 0 else [
                "always", "everysec"
            ]
            for policy in order:
                runs[policy].append(measure(policy, Path(logs), round_))
                print(f"round {round_} {policy}: {runs[policy][-1]}", flush=True)
    head = ["appendfsync", *runs["always"][0]]
    body = [[f"`{policy}`", *(_median_range([r[k] for r in rows]) for k in rows[0])]
            for policy, rows in runs.items()]
    print("\n" + "\n".join(table(head, body)))


def _median_range(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f} ({min(values):,.0f}-{max(values):,.0f})"


if __name__ == "__main__":
    main()
