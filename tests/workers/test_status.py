"""`threadfold status`: the listing of threads with a backlog and quarantined threads,
each listed with the backlog the same read saw."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from tests.workers.harness import WORKERS_ONLY, make_settings, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.cli import main
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.redisio.client import text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

LISTED = re.compile(r"^  (\S+)\s+backlog\s+(\d+)\s+(?:version|entry) ", re.MULTILINE)


def _env(settings: Settings, monkeypatch: Any) -> None:
    for name, value in settings_env(settings).items():
        monkeypatch.setenv(name, value)


def test_the_listing_names_backlogs_and_quarantines_with_their_real_backlog(
    redis_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(redis_url, failure_limit=1, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    for n in (1, 2, 3):
        for i in range(n):
            producer.enqueue(f"b{n}", [{"role": "user", "content": str(i)}])
    producer.enqueue("sick", [{"role": "user", "content": "ok", "id": "1"}])
    bad = text(store.client.xadd(settings.keyspace.thread("_/sick").log, {"x": "by hand"}))
    Drainer(store, settings).drain("_/sick")
    _env(settings, monkeypatch)

    assert main(["status"]) == 1  # a thread is quarantined
    out = capsys.readouterr().out
    assert "threads with a backlog: 3" in out and "quarantined threads:    1" in out
    assert dict(LISTED.findall(out)) == {"_/b1": "1", "_/b2": "2", "_/b3": "3", "_/sick": "1"}
    assert f"entry {bad}: cannot decode: no payload (stream field 'd')" in out


def test_a_listed_thread_shows_its_backlog_even_while_workers_drain(
    redis_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # The listing and each thread's backlog used to be two reads: a thread drained in
    # between was listed with a backlog of 0. Drain while listing, again and again.
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    refs = [f"_/q{i}" for i in range(600)]
    for ref in refs:
        producer.enqueue(ref[2:], [{"role": "user", "content": "x"}])
    _env(settings, monkeypatch)
    drainer = Drainer(store_for(settings), settings)
    draining = threading.Thread(target=lambda: [drainer.drain(ref) for ref in refs])
    draining.start()
    listings = []
    try:
        while draining.is_alive():
            assert main(["status"]) == 0
            listings.append(LISTED.findall(capsys.readouterr().out))
    finally:
        draining.join()
    shown = [backlog for listing in listings for _, backlog in listing]
    assert shown and all(b == "1" for b in shown), sorted(set(shown))
    assert main(["status"]) == 0
    assert "threads with a backlog: 0" in capsys.readouterr().out
