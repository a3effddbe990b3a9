"""``/metrics`` and the API's metrics flush while Redis is full or down (real redis-servers).

A scrape flushes the API's own counts before it reads the totals. When Redis refuses
that flush (full) the scrape still answers from what it reads, and the counts wait for
the next flush; when Redis cannot be read at all, the scrape is a 503. The background
flush logs one warning per outage and one line when it works again, not a traceback a
second.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from tests.api.client import Recorder, api_settings
from tests.infra.processes import wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import WORKERS_ONLY
from threadfold.api.app import Resources, build_resources, create_app


def samples(body: str) -> dict[str, float]:
    """Every sample by name and labels, as ``name{k="v",...}``."""
    found = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            found[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
    return found


@contextmanager
def api(server: RedisServer, flush_seconds: float) -> Iterator[tuple[TestClient, Resources]]:
    settings = api_settings(
        server.url,
        **WORKERS_ONLY,  # a backlog to report while Redis is full
        metrics_flush_seconds=flush_seconds,
        metrics_liveness_seconds=max(60.0, flush_seconds * 2),
    )
    resources = build_resources(settings, waker=Recorder())
    app = create_app(settings, resources)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client, resources


def test_a_scrape_answers_while_redis_is_full_and_its_counts_wait_for_the_next_flush(
    redis_server: RedisServer,
) -> None:
    # No background flush during the test: only the scrapes flush.
    with api(redis_server, flush_seconds=3600) as (client, res), redis_server.probe() as admin:
        keyspace = res.settings.keyspace
        assert client.post("/threads/t/deltas", json={"messages": ["hi"]}).status_code == 202
        admin.config_set("maxmemory", 1)  # every write that may grow memory is refused

        full = client.get("/metrics")
        assert full.status_code == 200, full.text
        shown = samples(full.text)
        assert shown["threadfold_threads_with_backlog"] == 1  # what monitoring needs now
        assert "threadfold_deltas_ingested_total" not in shown  # its flush was refused
        assert admin.exists(keyspace.metrics_totals, keyspace.metrics_procs) == 0  # nothing

        admin.config_set("maxmemory", 0)
        shown = samples(client.get("/metrics").text)
        assert shown["threadfold_deltas_ingested_total"] == 1  # kept, and flushed now
        # The scrape answered while Redis was full is counted too.
        assert shown['threadfold_http_requests_total{route="metrics",status="200"}'] == 1


def test_a_scrape_while_redis_is_down_is_a_503_and_its_counts_wait(
    redis_server: RedisServer,
) -> None:
    with api(redis_server, flush_seconds=3600) as (client, _):
        assert client.post("/threads/t/deltas", json={"messages": ["hi"]}).status_code == 202
        redis_server.stop()
        down = client.get("/metrics")
        assert down.status_code == 503, down.text
        assert down.json()["error"]["code"] == "unavailable"
        redis_server.restart()
        shown = samples(client.get("/metrics").text)
        assert shown["threadfold_deltas_ingested_total"] == 1
        assert shown['threadfold_http_requests_total{route="metrics",status="503"}'] == 1


def test_the_background_flush_logs_one_line_per_outage_down_or_full(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="threadfold.api")
    with api(redis_server, flush_seconds=0.02) as (_, resources):
        outage = resources.flush_outage

        def outage_of_ten_flushes(start: Callable[[], object], end: Callable[[], object]) -> None:
            start()
            wait_until(lambda: outage.failures >= 10, 30, message="flushes did not fail")
            end()
            wait_until(lambda: outage.failures == 0, 30, message="flushes did not recover")

        outage_of_ten_flushes(redis_server.stop, redis_server.restart)
        with redis_server.probe() as admin:
            outage_of_ten_flushes(
                lambda: admin.config_set("maxmemory", 1),
                lambda: admin.config_set("maxmemory", 0),
            )

    lines = [r for r in caplog.records if r.name == "threadfold.api"]
    warnings = [r for r in lines if r.levelno == logging.WARNING]
    assert len(warnings) == 2, [r.getMessage() for r in warnings]
    down, full = (r.getMessage() for r in warnings)
    assert down.startswith("could not flush metrics: Redis is out of reach (Connection"), down
    assert full.startswith("could not flush metrics: Redis is full (RedisFull:"), full
    assert all("the counts are kept for the next flush" in m for m in (down, full))
    assert not any(r.exc_info for r in warnings)  # no traceback for an outage
    again = [r.getMessage() for r in lines if r.levelno == logging.INFO]
    assert len(again) == 2 and all(m.startswith("metrics flushed again, after") for m in again)
