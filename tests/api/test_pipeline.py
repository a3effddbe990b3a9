"""``GET /pipeline``: /metrics' totals as JSON for the page, read from a real stack
(a redis-server, an API process and a Celery worker)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra.processes import wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker
from threadfold.workers.metrics import LAG_BUCKETS_MS


@pytest.fixture
def api(redis_server: RedisServer, tmp_path: Path) -> Iterator[str]:
    settings = make_settings(redis_server.url)
    api, url = start_api(settings, tmp_path)
    worker = start_worker(settings, "pipeline", tmp_path)
    try:
        yield url
    finally:
        api.kill()
        worker.kill()


def _sample(url: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/pipeline")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_the_pipeline_counts_what_was_ingested_and_applied(api: str) -> None:
    before = _sample(api)
    assert before["visible_lag_ms"]["bounds"] == list(LAG_BUCKETS_MS)
    for n in range(5):
        response = httpx.post(f"{api}/threads/p{n}/deltas", json={"messages": ["hi", "there"]})
        assert response.status_code == 202
    wait_until(lambda: _sample(api)["entries_applied"] >= 5, 30, message="nothing applied")
    after = _sample(api)
    assert after["deltas_ingested"] - before["deltas_ingested"] == 5
    assert after["entries_applied"] - before["entries_applied"] == 5
    assert after["commits"] >= 1 and after["at_ms"] > before["at_ms"]
    counts = after["visible_lag_ms"]["counts"]
    assert len(counts) == len(LAG_BUCKETS_MS) + 1  # +Inf last
    assert counts == sorted(counts) and counts[-1] == 5  # cumulative, every delta once
    assert after["threads_with_backlog"] == 0 and after["threads_quarantined"] == 0
    assert after["processes"]["api"] >= 1


def test_a_query_the_pipeline_does_not_take_is_refused_naming_it(api: str) -> None:
    response = httpx.get(f"{api}/pipeline", params={"window": "60"})
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "window"
