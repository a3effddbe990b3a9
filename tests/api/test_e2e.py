"""Through HTTP, end to end: a real API process, real workers, a real redis-server, and
each broker: the state's Redis, then RabbitMQ (the API's wake-ups go through it)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra.processes import wait_until
from tests.workers.harness import make_settings, start_api, start_worker
from tests.workers.produce import random_messages
from threadfold.core import dump_messages
from threadfold.testing import Ledger, version_key
from threadfold.workers.settings import Settings


@pytest.fixture
def stack(
    redis_url: str, broker_url: str | None, tmp_path: Path
) -> Iterator[tuple[httpx.Client, Settings]]:
    settings = make_settings(redis_url, broker_url=broker_url)
    api, url = start_api(settings, tmp_path)
    workers = [start_worker(settings, f"e{i}", tmp_path) for i in range(2)]
    client = httpx.Client(base_url=url, timeout=30)
    try:
        yield client, settings
    finally:
        client.close()
        api.kill()
        for worker in workers:
            worker.kill()


def _send(client: httpx.Client, sent: Ledger, rng: random.Random, step: int) -> None:
    if rng.random() < 0.3:  # a bulk call across threads
        batch = [
            {"thread_id": f"h{rng.randrange(30)}", "messages": random_messages(rng, step)}
            for _ in range(rng.randint(2, 6))
        ]
        response = client.post("/deltas", json={"deltas": batch})
        assert response.status_code == 202, response.text
        for item, result in zip(batch, response.json()["results"], strict=True):
            sent.add(
                f"_/{item['thread_id']}", result["version"], list(item["messages"]), result["ids"]
            )
        return
    thread, messages = f"h{rng.randrange(30)}", random_messages(rng, step)
    response = client.post(f"/threads/{thread}/deltas", json={"messages": messages})
    assert response.status_code == 202, response.text
    result = response.json()
    sent.add(f"_/{thread}", result["version"], messages, result["ids"])


def test_random_deltas_through_http_read_back_with_min_version_equal_the_fold(
    stack: tuple[httpx.Client, Settings],
) -> None:
    client, _ = stack
    rng = random.Random(42)
    sent = Ledger()
    for step in range(600):
        _send(client, sent, rng, step)
    for ref, deltas in sent.items():
        thread = ref.split("/", 1)[1]
        last = max((v for v, _, _ in deltas), key=version_key)
        response = client.get(f"/threads/{thread}/state", params={"min_version": last, "wait": 20})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert version_key(body["version"]) >= version_key(last)
        assert body["messages"] == dump_messages(sent.expected(ref)), ref


def test_metrics_include_the_workers_commits_and_lag(stack: tuple[httpx.Client, Settings]) -> None:
    client, _ = stack
    version = client.post("/threads/m/deltas", json={"messages": ["x"]}).json()["version"]
    assert client.get("/threads/m/state", params={"min_version": version, "wait": 20}).is_success

    def exported() -> bool:
        text = client.get("/metrics").text
        return "threadfold_commits_total" in text and "threadfold_visible_lag_ms_bucket" in text

    wait_until(exported, 20, interval=0.2, message="worker metrics never reached /metrics")
    text = client.get("/metrics").text
    assert 'threadfold_http_requests_total{route="post_delta",status="202"}' in text
    assert "threadfold_threads_with_backlog 0" in text


def test_the_api_is_ready_with_its_broker_answering(stack: tuple[httpx.Client, Settings]) -> None:
    client, _ = stack
    response = client.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json() == {"ok": True, "redis": True, "broker": True}
