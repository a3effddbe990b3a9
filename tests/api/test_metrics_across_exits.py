"""``/metrics`` counters against real processes: a redis-server, Celery workers that stop,
die and restart, and the API that renders the totals. No counter ever goes down."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.infra.processes import wait_until
from tests.workers.harness import WORKERS_ONLY, make_settings, start_api, start_worker
from threadfold.workers.settings import Settings

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
#: Samples that are counts since the beginning: the ones Prometheus reads a drop of as a reset.
CUMULATIVE = ("_total", "_bucket", "_count", "_sum")


def scrape(client: httpx.Client) -> Samples:
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def applied(client: httpx.Client) -> float:
    return scrape(client).get(("threadfold_entries_applied_total", ()), 0.0)


def live_workers(client: httpx.Client) -> float:
    return scrape(client)[("threadfold_processes", (("role", "worker"),))]


def send_and_wait(client: httpx.Client, count: int, start: int) -> None:
    """``count`` one-message deltas over 8 threads, each answered 202 and then visible."""

    def one(i: int) -> None:
        thread = f"t{i % 8}"
        answer = client.post(f"/threads/{thread}/deltas", json={"messages": [f"m{i}"]})
        assert answer.status_code == 202, answer.text
        version = answer.json()["version"]
        seen = client.get(f"/threads/{thread}/state", params={"min_version": version, "wait": 20})
        assert seen.status_code == 200, seen.text

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(start, start + count)))


def assert_none_lower(before: Samples, after: Samples) -> None:
    lower = {
        key: (value, after.get(key, 0.0))
        for key, value in before.items()
        if key[0].endswith(CUMULATIVE) and after.get(key, 0.0) < value
    }
    assert not lower, f"counters went down (before, after): {lower}"


@contextlib.contextmanager
def api_client(settings: Settings, log_dir: Path) -> Iterator[httpx.Client]:
    """A real API process and a client of it."""
    process, url = start_api(settings, log_dir)
    client = httpx.Client(base_url=url, timeout=30)
    try:
        yield client
    finally:
        client.close()
        process.kill()


def test_no_counter_goes_down_when_workers_stop_die_and_restart(
    redis_url: str, tmp_path: Path
) -> None:
    # A short liveness window, so that the wait past it below is short.
    settings = make_settings(redis_url, metrics_liveness_seconds=2.0, **WORKERS_ONLY)
    workers = [start_worker(settings, f"w{i}", tmp_path) for i in range(2)]
    with contextlib.ExitStack() as stack:
        stack.callback(lambda: [worker.kill() for worker in workers])
        api = stack.enter_context(api_client(settings, tmp_path))
        send_and_wait(api, 40, 0)
        wait_until(lambda: applied(api) == 40, 20, 0.1, "the workers' counts never reached 40")
        before = scrape(api)

        stopped, killed = workers
        stopped.send_signal(signal.SIGTERM)
        stopped.wait(60)
        killed.kill()
        # Past the liveness window: no worker process is taken for alive any more.
        wait_until(lambda: live_workers(api) == 0, 20, 0.1, "stopped workers still counted")
        after = scrape(api)
        assert_none_lower(before, after)
        assert after[("threadfold_entries_applied_total", ())] == 40

        workers.append(start_worker(settings, "w2", tmp_path))
        send_and_wait(api, 20, 40)
        wait_until(lambda: applied(api) == 60, 20, 0.1, "the restarted worker's counts")
        assert_none_lower(after, scrape(api))


def test_a_worker_that_stops_gracefully_flushes_its_last_counts(
    redis_url: str, tmp_path: Path
) -> None:
    # Workers flush only when they exit: whatever a scrape shows came from that flush.
    settings = make_settings(
        redis_url, **WORKERS_ONLY, metrics_flush_seconds=3600, metrics_liveness_seconds=7200
    )
    worker = start_worker(settings, "w", tmp_path)
    with contextlib.ExitStack() as stack:
        stack.callback(worker.kill)
        api = stack.enter_context(api_client(settings, tmp_path))
        send_and_wait(api, 12, 0)
        assert applied(api) == 0  # nothing flushed yet: the interval is an hour
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
        assert applied(api) == 12
        assert live_workers(api) == 0  # it left the live processes as it went
