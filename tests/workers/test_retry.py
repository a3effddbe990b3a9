"""`threadfold retry`: the entry a drain failed on is skipped wherever it sat in its
batch, and recorded; a thread that does not exist is refused and nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.api.client import api_client, api_settings
from tests.infra.processes import wait_until
from tests.workers.harness import (
    ROOT,
    WORKERS_ONLY,
    make_settings,
    start_worker,
    state_dump,
    store_for,
    wait_drained,
)
from tests.workers.test_concurrency import NoWake
from threadfold.core.codec import encode_messages
from threadfold.core.messages import HumanMessage
from threadfold.testing import version_key
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.ops.processes import settings_env
from threadfold.workers.redisio.client import text
from threadfold.workers.runtime.app import CeleryWaker, make_celery
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.runtime.drain.batch import read_batch
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store

THREADFOLD = str(Path(sys.executable).with_name("threadfold"))
WHY = "cannot fold: the incremental fold needs message ids; stamp them at ingestion"


def _threadfold(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [THREADFOLD, *args],
        env={**settings_env(settings), "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _id_less(store: Store, ref: str) -> str:
    """Append by hand an entry whose message has no id (the fold refuses it)."""
    log = store.keyspace.thread(ref).log
    payload = encode_messages([HumanMessage(content="no id")])
    return text(store.client.xadd(log, {"d": payload}))


def _contents(store: Store, ref: str) -> list[object]:
    return [m["content"] for m in state_dump(store, ref)]


def test_an_entry_failing_after_a_good_one_in_its_batch_is_skipped_and_the_thread_drains(
    redis_url: str, tmp_path: Path
) -> None:
    # The reproduction: a good entry, then an id-less one, in one batch; the
    # thread is quarantined; `retry --skip` must skip the id-less entry, and the thread
    # must drain and stay drained (it used to skip nothing and be quarantined again).
    settings = make_settings(redis_url, failure_limit=1)
    store = store_for(settings)
    ref = "_/mixed"
    app = make_celery(settings)
    waker = CeleryWaker(app, settings.queue)
    producer = Producer(store.client, settings, waker)
    producer.enqueue("mixed", [{"role": "user", "content": "good", "id": "1"}])
    bad = _id_less(store, ref)
    producer.enqueue("mixed", [{"role": "user", "content": "after", "id": "2"}])
    waker.wake([ref])  # the first enqueue's wake-up may have gone before the rest was in
    worker = start_worker(settings, "retry", tmp_path)
    try:
        wait_until(
            lambda: store.quarantined(range(settings.buckets)) == [ref], 60, message="quarantine"
        )
        status = store.status(ref)
        assert status is not None and status.quarantined_entry == bad

        done = _threadfold(settings, "retry", "mixed", "--skip")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"quarantine lifted; skipped entry {bad}; drain scheduled" in done.stdout

        wait_drained(store, [ref], timeout=60)
        assert _contents(store, ref) == ["good", "after"]
        # Still drained, and working: a later delta is applied and nothing is quarantined.
        producer.enqueue("mixed", [{"role": "user", "content": "later", "id": "3"}])
        wait_until(lambda: _contents(store, ref) == ["good", "after", "later"], 60)
        status = store.status(ref)
        assert status is not None and not status.quarantined and status.backlog == 0
        assert store.quarantined(range(settings.buckets)) == []
        assert [(s.entry, s.reason) for s in status.skipped] == [(bad, WHY)]
    finally:
        worker.kill()
        app.close()

    # The skip is on record where an operator looks: the CLI and the API.
    shown = _threadfold(settings, "status", "mixed")
    assert shown.returncode == 0, shown.stderr
    assert "skipped            1" in shown.stdout and f"entry {bad}: {WHY}" in shown.stdout
    with api_client(api_settings(redis_url)) as client:
        body = client.get("/threads/mixed/status").json()
    assert [(s["entry"], s["reason"]) for s in body["skipped"]] == [(bad, WHY)]
    assert body["backlog"] == 0 and body["quarantined"] is False


def test_a_failing_entry_is_first_after_the_cursor_when_its_thread_is_quarantined(
    redis_url: str,
) -> None:
    # The drain commits the good entries before the one that fails to fold (as it does
    # before an undecodable one), so the culprit is the next entry to apply.
    settings = make_settings(redis_url, failure_limit=1)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    good = producer.enqueue("t", [{"role": "user", "content": "good", "id": "1"}]).version
    bad = _id_less(store, "_/t")
    producer.enqueue("t", [{"role": "user", "content": "after", "id": "2"}])
    assert Drainer(store, settings).drain("_/t").quarantined
    status = store.status("_/t")
    assert status is not None
    assert (status.version, status.quarantined_entry, status.backlog) == (good, bad, 2)
    assert _contents(store, "_/t") == ["good"]


def test_retry_skips_the_failed_entry_even_when_entries_before_it_are_pending(
    redis_url: str,
) -> None:
    # A quarantine recorded on an entry that is not the first pending one (as drains
    # before the fix above left them): the skip removes that entry, and only that one.
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    before = producer.enqueue("t", [{"role": "user", "content": "pending", "id": "1"}]).version
    bad = _id_less(store, "_/t")
    producer.enqueue("t", [{"role": "user", "content": "after", "id": "2"}])
    fence = read_batch(store, "_/t", 200).fence
    assert store.fail("_/t", 0, WHY, bad, settings.wake_ttl_ms, fence=fence)  # quarantined on `bad`

    retried = store.retry("_/t", settings.wake_ttl_ms, skip=True)
    assert retried is not None
    assert (retried.was_quarantined, retried.skipped, retried.backlog) == (True, bad, True)
    status = store.status("_/t")
    assert status is not None and status.version == "0-0"  # `pending` is still to apply
    assert status.backlog == 2 and not status.quarantined
    Drainer(store, settings).drain("_/t")
    assert _contents(store, "_/t") == ["pending", "after"]
    status = store.status("_/t")
    assert status is not None and status.backlog == 0
    assert version_key(status.version) > version_key(bad) > version_key(before)
    assert [s.entry for s in status.skipped] == [bad]


def test_retry_skip_without_a_failed_entry_says_so_and_skips_nothing(redis_url: str) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("fine", [{"role": "user", "content": "a", "id": "1"}])
    Drainer(store, settings).drain("_/fine")
    done = _threadfold(settings, "retry", "fine", "--skip")
    assert done.returncode == 1
    assert "the thread was not quarantined; nothing skipped" in done.stdout
    status = store.status("_/fine")
    assert status is not None and status.skipped == () and status.backlog == 0


def _keys(store: Store) -> list[bytes]:
    return sorted(store.client.scan_iter(match="*", count=1000))


def test_retry_of_a_thread_never_written_or_deleted_refuses_and_writes_nothing(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    assert _keys(store) == []
    for args in (["retry", "ghost"], ["retry", "ghost", "--skip"]):
        done = _threadfold(settings, *args)
        assert done.returncode == 2
        assert "no such thread: 'ghost' (never written, or deleted)" in done.stderr
    assert _keys(store) == []

    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("gone", [{"role": "user", "content": "a", "id": "1"}])
    assert store.delete("_/gone")
    left = _keys(store)
    assert not any(b"_/gone" in key for key in left)
    done = _threadfold(settings, "retry", "gone", "--skip")
    assert done.returncode == 2 and "no such thread: 'gone'" in done.stderr
    assert _keys(store) == left  # nothing written: no key, no index entry
    assert not store.client.exists(store.keyspace.thread("_/gone").meta)
    assert store.threads(range(settings.buckets)) == []
    with api_client(api_settings(redis_url)) as client:
        assert client.get("/threads/gone/status").status_code == 404
        assert client.get("/threads/gone/state").status_code == 404
        assert client.delete("/threads/gone").status_code == 404


def test_a_failure_read_before_a_delete_writes_nothing(redis_url: str) -> None:
    """A drain that failed on a batch read before the thread was deleted neither brings
    the deleted thread back (as quarantined) nor quarantines the thread written again
    since on its predecessor's entry: FAIL is fenced like a commit."""
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("t", [{"role": "user", "content": "before", "id": "1"}])
    bad = _id_less(store, "_/t")
    stale = read_batch(store, "_/t", 200).fence
    assert store.delete("_/t")
    assert not store.fail("_/t", 0, WHY, bad, settings.wake_ttl_ms, fence=stale)
    assert store.status("_/t") is None
    assert store.client.keys("*_/t:*") == []
    assert store.client.zcard(store.keyspace.thread("_/t").quarantine) == 0

    producer.enqueue("t", [{"role": "user", "content": "again", "id": "1"}])
    assert not store.fail("_/t", 0, WHY, bad, settings.wake_ttl_ms, fence=stale)
    status = store.status("_/t")
    assert status is not None and not status.quarantined
    Drainer(store, settings).drain("_/t")
    assert _contents(store, "_/t") == ["again"]
