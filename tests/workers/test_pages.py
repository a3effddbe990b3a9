"""The packed thread state (workers/storage/pages.py) against the one-delta-at-a-time fold.

Threads long enough to span many pages and index buckets, edited at random; after
every drain the pages and index must be exactly consistent (``layout_problems``) and
the state equal to the fold. Fingerprint collisions are forced by swapping in a
fingerprint with four values: every lookup then has rivals, which the worker must tell
apart by the ids in the records the batch read with them, never apply a wrong match.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import Any

import pytest

from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from tests.workers.test_concurrency import NoWake, _commit_of
from threadfold.core import dump_messages
from threadfold.core.codec import encode_stored
from threadfold.core.messages import HumanMessage
from threadfold.testing import Ledger
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.metrics import Metrics
from threadfold.workers.redisio.client import text
from threadfold.workers.replay.replay import rebuild
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.runtime.drain.batch import read_batch
from threadfold.workers.settings import Settings
from threadfold.workers.storage import layout
from threadfold.workers.storage.pages import record

POOL = [f"m{i}" for i in range(90)]


def _messages(rng: random.Random, step: int, clears: bool) -> list[dict[str, Any]]:
    """Mostly appends and updates over 90 ids (so threads span many pages), removes of
    known and unknown ids, id-less appends, and now and then a REMOVE_ALL."""
    out: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.6:
            out.append(
                {
                    "role": "user",
                    "content": "x" * rng.randint(0, 300) + f"{step}",
                    "id": rng.choice(POOL),
                }
            )
        elif roll < 0.8:
            out.append({"role": "assistant", "content": f"a{step}"})
        elif roll < 0.998 or not clears:
            out.append({"type": "remove", "id": rng.choice([*POOL, "nope"]), "content": ""})
        else:
            out.append({"type": "remove", "id": "__remove_all__", "content": ""})
    return out


def _run(
    settings: Settings, seed: int, steps: int, threads: int, *, clears: bool = True
) -> tuple[Drainer, Ledger]:
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    # Counters are kept in the process (no periodic flush to Redis empties them), so a
    # test can read them after the run however long it took.
    drainer = Drainer(store, settings, metrics=Metrics(settings.keyspace, "worker", math.inf))
    rng = random.Random(seed)
    sent = Ledger()
    refs = [f"_/t{i}" for i in range(threads)]
    for step in range(steps):
        thread = rng.randrange(threads)
        messages = _messages(rng, step, clears)
        result = producer.enqueue(f"t{thread}", messages)
        sent.add(refs[thread], result.version, messages, result.ids)
        if rng.random() < 0.08:
            drainer.drain_many(refs)
            for ref in refs:
                assert layout.layout_problems(store, ref) == [], ref
    drainer.drain_many(refs)
    for ref in refs:
        assert layout.layout_problems(store, ref) == [], ref
        assert state_dump(store, ref) == dump_messages(sent.expected(ref)), ref
    return drainer, sent


def test_long_threads_edited_at_random_stay_packed_and_exact(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=7)
    drainer, _ = _run(settings, seed=11, steps=1500, threads=3)
    k = settings.keyspace.thread("_/t0")
    client = drainer.store.client
    assert client.hlen(k.pages) > 4, "the threads span several pages"
    assert int(client.hget(k.meta, "ib") or 0) > 1, "and several index buckets"


@pytest.mark.parametrize("kind", ["by length", "by prefix"])
def test_forced_fingerprint_collisions_are_told_apart_and_folded_exactly(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    def by_length(ident: str) -> bytes:  # four fingerprints for every id there is
        return bytes([0, 0, 0, len(ident) % 4])

    def by_prefix(ident: str) -> bytes:  # "m1", "m10" ... "m19" share one: ids that are
        return ident[:2].encode().ljust(4, b"_")  # prefixes of each other collide

    poor = by_length if kind == "by length" else by_prefix
    storage = "threadfold.workers.storage"
    users = ("commit", "lookup", "read_state", "rebuild")
    for module in (*(f"{storage}.{name}" for name in users), "threadfold.workers.storage.layout"):
        monkeypatch.setattr(f"{module}.fingerprint", poor)
    monkeypatch.setattr(
        "threadfold.workers.ingest.prepare.fingerprints", lambda ids: b"".join(map(poor, ids))
    )
    settings = make_settings(redis_url, batch_size=5)
    drainer, _ = _run(settings, seed=12, steps=500, threads=2)
    # Lookups had rivals: most stored ids share their fingerprint with several others,
    # and the batches' candidates were told apart by the ids in their records.
    stored = drainer.store.read_state("_/t0")
    assert stored is not None
    ids = [str(m.id) for m in stored.messages]
    shared = Counter(map(poor, ids))
    assert sum(n for n in shared.values() if n > 5) > len(ids) / 3
    if kind == "by prefix":
        assert any(b != a and b.startswith(a) for a in ids for b in ids if poor(a) == poor(b))


def test_paged_reads_equal_slices_of_the_whole_thread(redis_url: str) -> None:
    settings = make_settings(redis_url, batch_size=50)
    drainer, _ = _run(settings, seed=13, steps=400, threads=1, clears=False)
    store = drainer.store
    whole = store.read_state("_/t0")
    per = int(text(store.client.hget(settings.keyspace.thread("_/t0").meta, "pp")))
    assert whole is not None and len(whole.messages) > 3 * per
    ids = [str(m.id) for m in whole.messages]
    for limit in (0, 1, 5, per, 3 * per + 1, 10_000):
        first = store.read_state("_/t0", "all", "", limit)
        assert first is not None and [m.id for m in first.messages] == ids[:limit]
        assert first.has_more == (limit < len(ids))
        for at in (0, 1, per - 1, len(ids) // 2, len(ids) - 1):
            after = store.read_state("_/t0", "after", ids[at], limit)
            before = store.read_state("_/t0", "before", ids[at], limit)
            assert after is not None and before is not None
            assert [m.id for m in after.messages] == ids[at + 1 : at + 1 + limit]
            assert [m.id for m in before.messages] == ids[max(0, at - limit) : at]
            assert after.has_more == (len(ids) - at - 1 > limit)
            assert before.has_more == (at > limit)
    missing = store.read_state("_/t0", "after", "nope", 5)
    assert missing is not None and not missing.anchor_found and missing.messages == []


def test_a_drain_that_read_before_a_rebuild_cannot_commit_after_it(redis_url: str) -> None:
    settings = make_settings(redis_url, retention_seconds=3600, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("r", [{"role": "user", "content": "a", "id": "1"}])
    Drainer(store, settings).drain("_/r")
    producer.enqueue("r", [{"role": "user", "content": "b", "id": "1"}])
    stale = read_batch(store, "_/r", 100)  # a worker reads, then stalls...

    # ...while the state is tampered with and rebuilt from the log
    k = settings.keyspace.thread("_/r")
    tampered = record("1", 0, encode_stored(HumanMessage(content="tampered")), 8)
    store.client.hset(k.pages, "0", tampered)  # position 0 is in page 0 at any page size
    assert rebuild(store, "_/r").differences
    assert not store.commit_many([_commit_of(settings, "_/r", stale)])[0].ok
    Drainer(store, settings).drain("_/r")
    assert [m["content"] for m in state_dump(store, "_/r")] == ["b"]
    assert layout.layout_problems(store, "_/r") == []


def test_a_drain_that_read_before_a_delete_cannot_commit_into_the_thread_born_again(
    redis_url: str,
) -> None:
    # Commits write whole pages on the fence alone, so a fence must never repeat. A
    # deleted stream's last id is forgotten, so the thread born again can reach a
    # cursor it had (here an entry written by hand with that id; also an append in the
    # same millisecond, or a clock stepping back): its incarnation differs.
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    k = settings.keyspace.thread("_/d")
    first = producer.enqueue("d", [{"role": "user", "content": f"old{i}", "id": f"m{i}"}
                                   for i in range(4)])
    Drainer(store, settings).drain("_/d")
    producer.enqueue("d", [{"role": "user", "content": "stale", "id": "m1"}])
    stale = read_batch(store, "_/d", 100)  # a worker reads, then stalls...

    assert store.delete("_/d")  # ...while the thread is deleted and born again
    store.client.xadd(k.log, {"d": b"\x90"}, id=first.version)  # an empty delta, by hand
    producer.enqueue("d", [{"role": "user", "content": "new", "id": "x0"}])
    one = read_batch(store, "_/d", 1)
    assert store.commit_many([_commit_of(settings, "_/d", one)])[0].ok
    assert text(store.client.hget(k.meta, "c")) == first.version  # the same cursor...
    assert not store.commit_many([_commit_of(settings, "_/d", stale)])[0].ok  # ...refused
    Drainer(store, settings).drain("_/d")
    assert [m["content"] for m in state_dump(store, "_/d")] == ["new"]
    assert layout.layout_problems(store, "_/d") == []


def test_a_batch_read_before_any_commit_is_refused_after_a_delete(redis_url: str) -> None:
    settings = make_settings(redis_url, **WORKERS_ONLY)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("e", [{"role": "user", "content": "deleted", "id": "m0"}])
    stale = read_batch(store, "_/e", 100)  # the fence of a thread never committed
    assert store.delete("_/e")
    producer.enqueue("e", [{"role": "user", "content": "fresh", "id": "x0"}])
    assert not store.commit_many([_commit_of(settings, "_/e", stale)])[0].ok
    Drainer(store, settings).drain("_/e")
    assert [m["content"] for m in state_dump(store, "_/e")] == ["fresh"]


def test_a_batch_that_edits_or_empties_the_last_page_and_appends_to_it_writes_it_once(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, batch_size=50, key_prefix="lp")
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    drainer = Drainer(store, settings)
    ref, sent = "_/lp", Ledger()

    def send(messages: list[dict[str, Any]]) -> None:
        result = producer.enqueue("lp", messages)
        sent.add(ref, result.version, messages, result.ids)

    def check() -> None:
        drainer.drain(ref)
        assert layout.layout_problems(store, ref) == []
        assert state_dump(store, ref) == dump_messages(sent.expected(ref))

    send([{"role": "user", "content": c, "id": c} for c in "abc"])  # page 0, partly full
    check()
    assert int(store.client.hget(settings.keyspace.thread(ref).meta, "pp") or 0) > 4
    # One batch rewrites page 0 (an update) and appends to it.
    send([{"role": "user", "content": "B", "id": "b"}])
    send([{"role": "user", "content": "d", "id": "d"}])
    check()
    # One batch empties page 0 (removes) and appends to it again.
    send([{"type": "remove", "id": i, "content": ""} for i in "abcd"])
    send([{"role": "user", "content": "e", "id": "e"}])
    check()
    assert [m["id"] for m in state_dump(store, ref)] == ["e"]
