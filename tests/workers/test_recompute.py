"""Replay from the retained log: audit finds a corrupted state, rebuild fixes it, time
travel matches the fold of the log prefix; and the same as Celery jobs via the CLI."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.api.client import api_client, api_settings
from tests.workers.harness import make_settings, start_worker, state_dump, store_for
from tests.workers.produce import random_messages
from tests.workers.test_concurrency import NoWake
from threadfold.core import dump_messages
from threadfold.core.codec import encode_stored
from threadfold.core.messages import HumanMessage
from threadfold.testing import Ledger, version_key
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.cli import main
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.redisio.client import as_bytes, text
from threadfold.workers.replay.replay import NotReplayable, audit, rebuild, replay
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.pages import record, sized_records
from threadfold.workers.storage.store import Store


def _written(settings: Settings, threads: int = 3, deltas: int = 120) -> tuple[Store, Ledger]:
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    rng, sent = random.Random(8), Ledger()
    for step in range(deltas):
        thread = f"r{rng.randrange(threads)}"
        messages = random_messages(rng, step)
        result = producer.enqueue(thread, messages)
        sent.add(f"_/{thread}", result.version, messages, result.ids)
    drainer = Drainer(store, settings)
    for ref in sent.threads():
        drainer.drain(ref)
    return store, sent


def _corrupt(store: Store, ref: str) -> None:
    """Change a stored body behind the workers' back."""
    k = store.keyspace.thread(ref)
    start = min(int(text(n)) for n in store.client.hkeys(k.pages))
    page = as_bytes(store.client.hget(k.pages, start))
    (position, victim, _, _), *rest = sized_records(page)
    body = encode_stored(HumanMessage(content="tampered"))
    tampered = record(victim.decode(), position, body, 8) + b"".join(
        record(i.decode(), p, b, t) for p, i, b, t in rest
    )
    store.client.hset(k.pages, start, tampered)


def test_audit_finds_a_corrupted_state_and_rebuild_fixes_it(redis_url: str) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store, sent = _written(settings)
    ref = max(sent.threads(), key=lambda r: len(sent.deltas(r)))
    assert audit(store, ref).differences == []
    _corrupt(store, ref)
    found = audit(store, ref)
    assert found.differences and "differs" in found.differences[0]
    rebuild(store, ref)
    assert audit(store, ref).differences == []
    assert state_dump(store, ref) == dump_messages(sent.expected(ref))


def test_time_travel_matches_the_fold_of_the_log_prefix(redis_url: str) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store, sent = _written(settings, threads=1, deltas=60)
    [(ref, deltas)] = sent.items()
    ordered = sorted(deltas, key=lambda d: version_key(d[0]))
    with api_client(api_settings(redis_url, retention_seconds=3600)) as client:
        for cut in (1, 7, 30, len(ordered)):
            version = ordered[cut - 1][0]
            prefix = Ledger()
            for d in ordered[:cut]:
                prefix.add(ref, *d)
            expected = dump_messages(prefix.expected(ref))
            assert dump_messages(replay(store, ref, version).messages) == expected
            body = client.get("/threads/r0/state", params={"at_version": version}).json()
            assert body["messages"] == expected and body["version"] == version
            assert body["total"] == len(expected)


def test_a_trimmed_log_is_refused_for_replay_rather_than_half_replayed(redis_url: str) -> None:
    settings = make_settings(redis_url)  # retention 0: trimmed at once
    store, sent = _written(settings, threads=1, deltas=10)
    [(ref, deltas)] = sent.items()
    first, last = min(d[0] for d in deltas), max(d[0] for d in deltas)
    with pytest.raises(NotReplayable, match="retention trimmed its log"):
        audit(store, ref)
    with api_client(api_settings(redis_url)) as client:
        response = client.get("/threads/r0/state", params={"at_version": first})
    error = response.json()["error"]
    assert response.status_code == 410 and error["field"] == "at_version"
    assert error["oldest_version"] == last  # the live version: nothing before it replays


def test_recompute_runs_as_celery_jobs_and_reports_a_summary(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store, sent = _written(settings, threads=6, deltas=200)
    bad = sorted(sent.threads())[0]
    _corrupt(store, bad)
    for name, value in settings_env(settings).items():
        monkeypatch.setenv(name, value)
    workers = [start_worker(settings, f"rc{i}", tmp_path) for i in range(2)]
    try:
        assert main(["recompute", "--audit", "--all"]) == 1
        out = capsys.readouterr().out
        assert "audit: 6 threads: 5 matched, 1 differs, 0 failed; 200 deltas replayed" in out
        assert f"differs: {bad}: 0 added, 0 removed, 1 changed" in out
        assert main(["recompute", "--rebuild", "--threads", bad.split("/")[1]]) == 0
        assert "rebuild: 1 thread: 0 matched, 1 rebuilt, 0 failed" in capsys.readouterr().out
        assert main(["recompute", "--audit", "--prefix", "r"]) == 0
        assert "audit: 6 threads: 6 matched, 0 failed" in capsys.readouterr().out
    finally:
        for worker in workers:
            worker.kill()
    assert state_dump(store, bad) == dump_messages(sent.expected(bad))
    assert os.environ["THREADFOLD_RETENTION_SECONDS"] == "3600.0"
