"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``)
run against ``ThreadfoldSaver`` over a real stack: every capability it detects (put,
put_writes, get_tuple, list, delete_thread, delete_for_runs, copy_thread, prune) must be
detected and pass, over a direct client and over an HTTP one, and on a Redis Cluster.

The suite reuses thread ids (``thread-0``) across its capabilities, each with a fresh
saver: each saver gets a tenant of its own (a direct client's ``tenant``; for HTTP, an
API key bound to it, on an API process of this module's with a key per tenant).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncGenerator, Iterator
from pathlib import Path

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from tests.client.conftest import Stack
from tests.infra.redis_cluster import RedisCluster
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker
from threadfold import AsyncClient, AsyncHttpClient
from threadfold.langgraph import ThreadfoldSaver
from threadfold.workers.settings import Settings

#: Fresh savers the suite makes per run (one per capability), with room to spare.
TENANTS = 24


@pytest.fixture(scope="module")
def keyed_api(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An API process whose keys are each bound to a tenant of their own."""
    keys = {f"conformance-key-{i:02d}-0123456789": f"conf{i:02d}" for i in range(TENANTS)}
    api, url = start_api(stack.settings, tmp_path_factory.mktemp("conformance-api"),
                         THREADFOLD_API_KEYS=json.dumps(keys))
    try:
        yield url
    finally:
        api.kill()


def _run(kind: str, settings: Settings, api_url: str) -> object:
    tenants = itertools.count()

    async def saver() -> AsyncGenerator[BaseCheckpointSaver[str], None]:
        n = next(tenants)
        if kind != "http":
            client: AsyncClient | AsyncHttpClient = AsyncClient(
                settings=settings, tenant=f"conf{n:02d}x")
        else:
            client = AsyncHttpClient(api_url, f"conformance-key-{n:02d}-0123456789")
        try:
            yield ThreadfoldSaver(client)
        finally:
            await client.close()

    registered = checkpointer_test(name=f"ThreadfoldSaver[{kind}]")(saver)
    return asyncio.run(validate(registered))


@pytest.mark.parametrize("kind", ["direct", "http"])
def test_langgraphs_conformance_suite_passes_every_capability(
    kind: str, stack: Stack, keyed_api: str
) -> None:
    _passes_all(_run(kind, stack.settings, keyed_api))


def test_it_passes_on_a_redis_cluster(
    redis_cluster: RedisCluster, redis_server: RedisServer, tmp_path: Path
) -> None:
    """Every script's keys in one slot, a delete_for_runs fanned out over the buckets,
    a copy read from one slot and written to another: on a 3-master cluster."""
    settings = make_settings(redis_cluster.url, cluster=True, broker_url=redis_server.url,
                             key_prefix="cf")
    worker = start_worker(settings, "conformance", tmp_path)
    try:
        _passes_all(_run("cluster", settings, ""))
    finally:
        worker.kill()


def _passes_all(report: object) -> None:
    results = report.results  # type: ignore[attr-defined]
    detected = {cap for cap, r in results.items() if r.detected}
    assert detected == {c.value for c in ALL_CAPABILITIES}, detected
    failed = {cap: r.failures for cap, r in results.items() if not r.passed}
    assert not failed, failed
    assert report.passed_all()  # type: ignore[attr-defined]
