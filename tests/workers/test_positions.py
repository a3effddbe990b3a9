"""A batch comes with the stored positions of the ids it mentions.

Entries written by the producer list their ids' fingerprints (field ``f``), so the
worker gets the positions it needs (and the pages holding them) without decoding an
entry. Entries that do not list them (written by hand, or with an unreadable list) make
the worker look positions up by id; either way the folded state is the
one-delta-at-a-time fold. The log itself is read with a plain XREAD, from its start or
from a cursor the worker had: reads from too far back, or from past the cursor of a
thread written again, are read again from the cursor.
"""

from __future__ import annotations

import random
from typing import Any

from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from tests.workers.produce import random_messages
from threadfold.core import dump_messages
from threadfold.core.codec import encode_messages
from threadfold.core.ids import ensure_ids, uuid4_str
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import as_bytes, text
from threadfold.workers.runtime.drain import Drainer, _decode, _mentioned
from threadfold.workers.runtime.drain.batch import read_batches
from threadfold.workers.settings import Settings
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.pages import MAX_PAGE_RECORDS, records
from threadfold.workers.storage.store import Store


class NoWake:
    def wake(self, refs: object) -> None:
        pass


def test_read_batch_positions_equal_a_separate_lookup(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=50)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(3)
    drainer = Drainer(store, settings)
    for step in range(300):
        producer.enqueue(f"p{step % 3}", random_messages(rng, step))
        if step % 40 == 39:  # some state to look positions up in
            drainer.drain_many(["_/p0", "_/p1", "_/p2"])
    refs = ["_/p0", "_/p1", "_/p2"]
    batches = read_batches(store, refs, settings.batch_size)
    assert all(b.entries for b in batches)
    mentioned = [(r, _mentioned(_decode(b))) for r, b in zip(refs, batches, strict=True)]
    looked_up = store.positions_many(mentioned)
    for batch, (_, ids), expected in zip(batches, mentioned, looked_up, strict=True):
        assert batch.known(ids) == expected.positions
        assert expected.positions, "the batch mentions stored ids"
        # Both come with the pages holding those positions, alike.
        assert batch.per == expected.per
        held = {p // batch.per for p in expected.positions.values()}
        assert {n: batch.pages[n] for n in held} == expected.pages


def test_entries_without_their_ids_fold_exactly_too(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=9)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    rng = random.Random(5)
    sent = Ledger()
    drainer = Drainer(store, settings)
    for step in range(400):
        thread = f"h{rng.randrange(3)}"
        ref = f"_/{thread}"
        messages = random_messages(rng, step)
        how = rng.random()
        if how < 0.6:
            result = producer.enqueue(thread, messages)
            sent.add(ref, result.version, messages, result.ids)
        else:  # hand-written: no id list, or one Lua cannot read
            stamped = ensure_ids(messages, uuid4_str)
            fields: dict[str, bytes] = {"d": encode_messages(stamped)}
            if how < 0.8:
                fields["f"] = b"\x01\x02\x03"  # not a whole number of fingerprints
            log = settings.keyspace.thread(ref).log
            raw_version: bytes = store.client.xadd(log, fields)  # type: ignore[arg-type,assignment]
            sent.add(ref, raw_version.decode(), stamped, [str(m.id) for m in stamped])
            # A batch holding this entry comes without positions: the fallback runs.
            assert read_batches(store, [ref], settings.batch_size)[0].candidates is None
        if step % 25 == 0:
            drainer.drain_many(sorted(sent.threads()))
    drainer.drain_many(sorted(sent.threads()))
    for ref in sent.threads():
        assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref


def test_a_thread_longer_than_luas_unpack_limit_reads_whole(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=1000)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    for part in range(10):
        messages = [{"role": "user", "content": f"{part}.{i}"} for i in range(1000)]
        producer.enqueue("long", messages)
    Drainer(store, settings).drain_many(["_/long"])
    page = store.read_state("_/long")
    assert page is not None and page.total == 10_000
    # many messages to a page, the id once per record; reads give the ids back
    assert layout_problems(store, "_/long") == []
    k = settings.keyspace.thread("_/long")
    per = int(text(store.client.hget(k.meta, "pp")))
    assert 1 < per <= MAX_PAGE_RECORDS and store.client.hlen(k.pages) == -(-10_000 // per)
    first = records(as_bytes(store.client.hget(k.pages, "0")))[0]
    assert first[1] == str(page.messages[0].id).encode() and first[1] not in first[2]
    assert len({m.id for m in page.messages}) == 10_000
    assert [m.content for m in page.messages] == [
        f"{p}.{i}" for p in range(10) for i in range(1000)
    ]


def _retained(redis_url: str, **overrides: Any) -> tuple[Settings, Store, Producer]:
    """Small batches, applied entries kept in the log (retention)."""
    settings = make_settings(redis_url, batch_size=5, retention_seconds=3600, **overrides)
    store = store_for(settings)
    return settings, store, Producer(store.client, settings, NoWake())


def test_a_kept_log_is_read_from_the_cursor_by_a_worker_that_never_drained_it(
    redis_url: str,
) -> None:
    # With retention the applied entries stay in the log: a worker without a hint for
    # the thread reads from the log's start, finds only applied entries, and must read
    # again from the cursor instead of taking the thread for drained.
    settings, store, producer = _retained(redis_url, **WORKERS_ONLY)
    sent = Ledger()
    for step in range(40):
        messages = [{"role": "user", "content": f"c{step}", "id": f"m{step % 7}"}]
        result = producer.enqueue("k", messages)
        sent.add("_/k", result.version, messages, result.ids)
        if step == 29:
            Drainer(store, settings).drain("_/k")
            assert store.client.xlen(settings.keyspace.thread("_/k").log) == 30
    report = Drainer(store, settings).drain("_/k")  # a fresh worker: no hint
    assert report.entries == 10
    assert state_dump(store, "_/k") == dump_messages(sent.expected("_/k"))


def test_a_hint_past_the_cursor_of_a_thread_written_again_is_not_trusted(
    redis_url: str,
) -> None:
    settings, store, producer = _retained(redis_url)
    drainer = Drainer(store, settings)
    for step in range(8):
        producer.enqueue("w", [{"role": "user", "content": f"old{step}"}])
    drainer.drain("_/w")  # its hint is now the last of those entries
    assert store.delete("_/w")
    # Written again with entries below that hint (ids chosen by hand; an append can get
    # such ids after a clock step back): read from the hint, they would be skipped.
    log = settings.keyspace.thread("_/w").log
    for n in range(1, 4):
        stamped = ensure_ids([{"role": "user", "content": f"new{n}"}], uuid4_str)
        store.client.xadd(log, {"d": encode_messages(stamped)}, id=f"{n}-1")
    assert drainer.drain("_/w").entries == 3
    assert [m["content"] for m in state_dump(store, "_/w")] == ["new1", "new2", "new3"]
