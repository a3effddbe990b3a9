"""The lifecycle on a three-master Redis Cluster: metadata, update, search paged across
buckets on every node, count, copy, prune and delete, through the direct clients (sync
and asyncio: each bucket's part is sent straight to its slot's node), with a real
worker folding the deltas."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, start_worker
from threadfold import AsyncClient, Client, Conflict, NotFound

WAIT = 20.0


@pytest.mark.slow
def test_the_lifecycle_runs_on_a_cluster(
    tmp_path: Path, redis_cluster: RedisCluster, redis_url: str
) -> None:
    settings = make_settings(
        redis_cluster.url, cluster=True, broker_url=redis_url, key_prefix="lc", buckets=96
    )
    worker = start_worker(settings, "lifecycle-cluster", tmp_path)
    try:
        with Client(settings=settings) as client:
            names = [f"c{i}" for i in range(30)]  # over many buckets, so over every node
            last = {}
            for i, name in enumerate(names):
                done = client.append(name, [["user", name]], metadata={"team": f"t{i % 3}"})
                last[name] = done.version
            for name, version in last.items():
                client.wait_for(name, version, WAIT)
            seen, cursor = [], None
            while True:
                page = client.search(metadata={"team": "t1"}, limit=4, cursor=cursor)
                seen += [row.thread_id for row in page.threads]
                if page.cursor is None:
                    break
                cursor = page.cursor
            assert sorted(seen) == sorted(names[1::3])
            assert client.count() == 30 and client.count(metadata={"team": "t2"}) == 10
            assert client.update("c0", metadata={"team": "t9"}, pinned=True).pinned
            assert client.count(metadata={"team": "t9"}) == 1
            made = client.copy("c0", "c0-copy")
            client.wait_for("c0-copy", made.version, WAIT)
            assert client.state("c0-copy").messages == client.state("c0").messages
            with pytest.raises(Conflict):
                client.copy("c0", "c1")
            assert client.prune(metadata={"team": "t0"}).removed == 9  # c0 moved to t9
            with pytest.raises(NotFound):
                client.status("c3")

        async def asynchronous() -> None:
            async with AsyncClient(settings=settings) as aclient:
                page = await aclient.search(metadata={"team": "t2"}, limit=50)
                assert sorted(r.thread_id for r in page.threads) == sorted(names[2::3])
                assert await aclient.count(status="idle") == 22
                assert (await aclient.prune(prefix="c", dry_run=True)).removed == 21
                await aclient.delete("c0-copy")
                assert await aclient.count() == 21

        asyncio.run(asynchronous())
    finally:
        worker.kill()
