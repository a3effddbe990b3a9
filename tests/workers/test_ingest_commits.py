"""Appends committed by the ingest script itself (``THREADFOLD_INGEST_COMMITS``).

An append of new messages to a thread with nothing waiting is committed by the INGEST
call: the state, the index, the change event and every counter must be exactly what a
worker's drain of the same delta writes, and anything else (a backlog, an update, a
removal, a chunk, an id twice, a quarantine) must wait for a worker as before. Checked
against the one-delta-at-a-time fold, against the same deltas with the commits off, and
through the change feed, on a real Redis.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, state_dump, store_for
from threadfold.core import dump_messages
from threadfold.core.codec import decode_stored, encode_messages
from threadfold.core.context import approximate
from threadfold.core.convert import to_messages
from threadfold.core.results import Appended
from threadfold.testing import Ledger
from threadfold.workers.feed.apply import apply_in_place, in_order
from threadfold.workers.ingest.prepare import records_of
from threadfold.workers.ingest.producer import Delta, Producer
from threadfold.workers.redisio.client import as_bytes, text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import feed_record, meta
from threadfold.workers.storage.follow import LEAST_WINDOW_MS as WINDOW_MS
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.pages import sized_records
from threadfold.workers.storage.store import Store


class Woken:
    """Records the refs the producer asks to wake (the drain is the test's to run)."""

    def __init__(self) -> None:
        self.refs: list[str] = []

    def wake(self, refs: Sequence[str]) -> None:
        self.refs += refs


def _producer(settings: Settings) -> tuple[Store, Producer, Woken]:
    store = store_for(settings)
    woken = Woken()
    return store, Producer(store.client, settings, woken), woken


def _meta(store: Store, ref: str, field: str) -> str | None:
    raw = store.client.hget(store.keyspace.thread(ref).meta, field)
    return None if raw is None else raw.decode() if isinstance(raw, bytes) else str(raw)


def _feed(store: Store, ref: str) -> list[tuple[str, str, feed_record.FeedEvent | None]]:
    """The thread's kept change events: (version, prev, event)."""
    out = []
    raw: Any = store.client.xrange(store.keyspace.thread(ref).feed)
    for version, fields in raw:
        out.append((text(version), text(fields[b"p"]), feed_record.decode(as_bytes(fields[b"e"]))))
    return out


def test_an_append_to_a_quiet_thread_is_committed_by_the_call(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="ic1")
    store, producer, woken = _producer(settings)
    store.follow(["_/q"], WINDOW_MS)  # a follower: the commits keep their events
    first = producer.enqueue("q", [("system", "be brief"), ("user", "hi")])
    second = producer.enqueue("q", [{"role": "assistant", "content": "hello", "id": "a1"}])
    assert woken.refs == []  # nothing for a worker: both committed by their calls
    status = store.status("_/q")
    assert status is not None and (status.version, status.backlog) == (second.version, 0)
    assert [m["content"] for m in state_dump(store, "_/q")] == ["be brief", "hi", "hello"]
    assert layout_problems(store, "_/q") == []
    assert store.client.xlen(settings.keyspace.thread("_/q").log) == 0  # trimmed, as applied
    assert _meta(store, "_/q", meta.APPLIED) == "2"
    # The records carry the token counts a worker's commit writes.
    pages: Any = store.client.hgetall(settings.keyspace.thread("_/q").pages)
    counted = [t for page in pages.values() for _, _, _, t in sized_records(as_bytes(page))]
    assert counted == [approximate(m) for m in store.read_state("_/q").messages]  # type: ignore[union-attr]
    # One change event a commit, chained, each the appends at their positions.
    events = _feed(store, "_/q")
    assert [(v, p) for v, p, _ in events] == [(first.version, "0-0"),
                                             (second.version, first.version)]
    assert events[1][2] is not None and [u[:2] for u in events[1][2].upserts] == [(2, "a1")]


def test_a_long_thread_grown_and_edited_by_the_call_keeps_its_index_exact(
    redis_url: str,
) -> None:
    # 300 messages appended one or a few at a time, each call committing them (its index
    # buckets split five times on the way), then updates and removals of stored ids,
    # found through that index: the state is the one-at-a-time fold and the layout holds.
    settings = make_settings(redis_url, key_prefix="grown")
    store, producer, woken = _producer(settings)
    sent = Ledger()
    n = 0
    for size in itertools.islice(itertools.cycle([1, 3, 1, 8, 2]), 100):
        messages = [{"role": "user", "content": f"m{i}", "id": f"m{i}"}
                    for i in range(n, min(n + size, 300))]
        if not messages:
            break
        n += len(messages)
        done = producer.enqueue("long", messages)
        sent.add("_/long", done.version, messages, done.ids)
    edits = [[{"role": "user", "content": f"m{i} edited", "id": f"m{i}"}]
             for i in range(0, 300, 7)]
    edits += [[{"type": "remove", "content": "", "id": f"m{i}"}] for i in range(3, 300, 11)]
    for messages in edits:
        done = producer.enqueue("long", messages)
        sent.add("_/long", done.version, messages, done.ids)
    assert woken.refs == []  # every call committed its deltas
    assert state_dump(store, "_/long") == dump_messages(sent.expected("_/long"))
    assert layout_problems(store, "_/long") == []
    assert int(_meta(store, "_/long", "ib") or 0) >= 5


def test_an_update_and_a_removal_of_stored_ids_are_committed_by_the_call(
    redis_url: str,
) -> None:
    settings = make_settings(redis_url, key_prefix="ic5")
    store, producer, woken = _producer(settings)
    store.follow(["_/u"], WINDOW_MS)  # a follower: the commits keep their events
    producer.enqueue("u", [{"role": "user", "content": f"m{i}", "id": f"m{i}"}
                           for i in range(40)])  # pages and index buckets of their own
    edit = producer.enqueue("u", [{"role": "user", "content": "edited", "id": "m3"},
                                  {"type": "remove", "content": "", "id": "m20"},
                                  {"role": "ai", "content": "new", "id": "n1"}])
    assert woken.refs == []
    status = store.status("_/u")
    assert status is not None and (status.version, status.backlog) == (edit.version, 0)
    contents = [m["content"] for m in state_dump(store, "_/u")]
    assert contents == [f"m{i}" if i != 3 else "edited" for i in range(40) if i != 20] + ["new"]
    assert layout_problems(store, "_/u") == []
    event = _feed(store, "_/u")[-1][2]
    assert event is not None and event.removed == [("m20", 20)]
    assert [u[:2] for u in event.upserts] == [(3, "m3"), (40, "n1")]


@pytest.mark.parametrize(
    ("later", "why"),
    [
        ([{"type": "remove", "content": "", "id": "gone"}], "a removal of an id not stored"),
        ([{"type": "remove", "content": "", "id": "__remove_all__"}], "a removal of all"),
        ([{"type": "AIMessageChunk", "content": "par", "id": "c1"}], "a chunk"),
        ([{"role": "user", "content": "x", "id": "d"}, {"role": "user", "content": "y",
                                                        "id": "d"}], "one id twice"),
    ],
)
def test_what_is_not_a_plain_append_waits_for_a_worker(
    redis_url: str, later: list[Any], why: str
) -> None:
    settings = make_settings(redis_url, key_prefix="ic2")
    store, producer, woken = _producer(settings)
    first = producer.enqueue("w", [{"role": "user", "content": "first", "id": "m1"}])
    assert woken.refs == []
    done = producer.enqueue("w", later)
    assert woken.refs == ["_/w"], why
    status = store.status("_/w")
    assert status is not None and status.backlog == 1
    # ...and anything after it waits too, behind it, in order.
    after = producer.enqueue("w", ["after"])
    assert store.status("_/w").backlog == 2  # type: ignore[union-attr]
    Drainer(store, settings).drain("_/w")
    expected = Ledger()
    expected.add("_/w", first.version, [{"role": "user", "content": "first", "id": "m1"}],
                 first.ids)
    expected.add("_/w", done.version, later, done.ids)
    expected.add("_/w", after.version, ["after"], after.ids)
    assert state_dump(store, "_/w") == dump_messages(expected.expected("_/w"))
    assert layout_problems(store, "_/w") == []


def test_a_quarantined_thread_and_the_setting_off_commit_nothing(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="ic3", ingest_commits=False)
    store, producer, woken = _producer(settings)
    producer.enqueue("off", ["a"])
    assert woken.refs == ["_/off"] and store.status("_/off").backlog == 1  # type: ignore[union-attr]
    on = make_settings(redis_url, key_prefix="ic3")
    store, producer, woken = _producer(on)
    producer.enqueue("qq", ["a"])
    store.client.hset(on.keyspace.thread("_/qq").meta, meta.QUARANTINE, "by the test")
    producer.enqueue("qq", ["b"])
    assert woken.refs == [] and store.status("_/qq").backlog == 1  # type: ignore[union-attr]


def test_a_stream_of_bulks_is_left_to_the_workers(redis_url: str) -> None:
    settings = make_settings(redis_url, key_prefix="ic4")
    store, producer, woken = _producer(settings)
    bulks = [[Delta(f"s{i}", [f"m{k}"]) for i in range(3)] for k in range(2)]
    results = [r for bulk in producer.enqueue_stream(bulks) for r in bulk]
    assert sorted(set(woken.refs)) == ["_/s0", "_/s1", "_/s2"]  # a batch job: all waits
    assert all(store.status(f"_/s{i}").backlog == 2 for i in range(3))  # type: ignore[union-attr]
    woken.refs.clear()
    bulk = [Delta(f"c{i}", ["hi"]) for i in range(500)]
    producer.enqueue_many(bulk)  # a call, however big, commits what it can
    assert woken.refs == [] and len(results) == 6
    assert all(store.status(f"_/c{i}").backlog == 0 for i in range(len(bulk)))  # type: ignore[union-attr]


def test_a_cluster_commits_at_ingest_in_each_threads_slot(redis_cluster: RedisCluster) -> None:
    """Every key a commit here writes is in its thread's slot (a key elsewhere would be
    refused, CROSSSLOT): threads of many buckets, one call, on a 3-master cluster."""
    settings = make_settings(redis_cluster.url, cluster=True, key_prefix="icc")
    store, producer, woken = _producer(settings)
    done = producer.enqueue_many([Delta(f"c{i}", [f"hello {i}", ("ai", "hi")])
                                  for i in range(40)])
    assert woken.refs == [] and len({d.version for d in done}) >= 1
    for i in range(40):
        status = store.status(f"_/c{i}")
        assert status is not None and (status.backlog, status.messages) == (0, 2)
        assert [m["content"] for m in state_dump(store, f"_/c{i}")] == [f"hello {i}", "hi"]
        assert layout_problems(store, f"_/c{i}") == []


def test_records_of_refuses_what_a_worker_must_fold() -> None:
    def payload(items: list[Any]) -> bytes:
        messages = to_messages(items)
        return encode_messages([msgspec.structs.replace(m, id=m.id or f"i{n}")
                                for n, m in enumerate(messages)])

    plain = records_of(payload(["a", ("ai", "b")]))
    assert plain and records_of(payload([{"type": "remove", "content": "", "id": "x"}]))
    everything = [{"type": "remove", "content": "", "id": "__remove_all__"}]
    assert records_of(payload(everything)) == b""
    assert records_of(payload([{"type": "AIMessageChunk", "content": "c", "id": "x"}])) == b""
    twice = [{"role": "user", "content": "a", "id": "x"}, {"role": "user", "content": "b",
                                                           "id": "x"}]
    assert records_of(payload(twice)) == b""


# -- the law: whatever mix and batching, the same state and feed as the workers' --------

_IDS = [f"m{i}" for i in range(6)]
_EXAMPLES = itertools.count()
_message = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, st.text("abc", max_size=3)),
    st.builds(lambda i, c: {"role": "assistant", "content": c, "id": i},
              st.sampled_from(_IDS), st.text("xyz", max_size=3)),
    st.builds(lambda i: {"type": "remove", "content": "", "id": i}, st.sampled_from(_IDS)),
    st.builds(lambda i: {"type": "AIMessageChunk", "content": "ch", "id": i},
              st.sampled_from(_IDS)),
)
# A step: deltas sent in one call (possibly of two threads), then maybe a drain.
_step = st.tuples(
    st.lists(st.tuples(st.sampled_from(["t1", "t2"]), st.lists(_message, min_size=1,
                                                                 max_size=3)),
             min_size=1, max_size=3),
    st.booleans(),
)


def _valid(deltas: list[tuple[str, list[Any]]], present: dict[str, set[str]]) -> bool:
    """Whether every removal names an id its thread holds by then (a removal of an id
    never stored fails LangGraph's reducer: poison, a subject of other tests); the ids
    held are updated as the deltas would leave them."""
    after = {t: set(ids) for t, ids in present.items()}
    for thread, messages in deltas:
        held = after.setdefault(thread, set())
        for m in messages:
            if m.get("type") == "remove":
                if m["id"] not in held:
                    return False
                held.discard(m["id"])
            elif "id" in m:
                held.add(m["id"])
    present.update(after)
    return True


def _run(settings: Settings, steps: list[tuple[list[tuple[str, list[Any]]], bool]]) -> Ledger:
    store, producer, _ = _producer(settings)
    store.follow(["_/t1", "_/t2"], WINDOW_MS)  # followed: their feeds are compared
    drainer = Drainer(store, settings)
    sent = Ledger()
    present: dict[str, set[str]] = {}
    for deltas, drain in steps:
        if not _valid(deltas, present):
            continue
        done: list[Appended] = producer.enqueue_many([Delta(t, m) for t, m in deltas])
        for (thread, messages), answer in zip(deltas, done, strict=True):
            sent.add(f"_/{thread}", answer.version, messages, answer.ids)
        if drain:
            for ref in ("_/t1", "_/t2"):
                drainer.drain(ref)
    for ref in ("_/t1", "_/t2"):
        drainer.drain(ref)
    return sent


def _feed_state(store: Store, ref: str) -> tuple[str, list[bytes]]:
    """The thread's change events applied in order from nothing: the version reached
    and the stored bodies in position order (each event chained on the one before)."""
    state: dict[int, bytes] = {}
    held = "0-0"
    for version, prev, event in _feed(store, ref):
        assert event is not None and prev == held
        apply_in_place(state, reset=event.reset, removed=[p for _, p in event.removed],
                       upserts=[(p, b) for p, _, b in event.upserts])
        held = version
    return held, in_order(state)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=1, max_size=8))
def test_commits_at_ingest_equal_the_workers_fold_and_feed(
    redis_url: str, steps: list[tuple[list[tuple[str, list[Any]]], bool]]
) -> None:
    n = next(_EXAMPLES)  # a keyspace per example: nothing carries over
    here = make_settings(redis_url, key_prefix=f"law{n}h")
    there = make_settings(redis_url, key_prefix=f"law{n}w", ingest_commits=False)
    sent, sent_there = _run(here, steps), _run(there, steps)
    store, workers_only = store_for(here), store_for(there)
    for ref in sent.threads():  # (each run stamps id-less messages with ids of its own)
        assert state_dump(store, ref) == dump_messages(sent.expected(ref))
        assert state_dump(workers_only, ref) == dump_messages(sent_there.expected(ref))
        assert layout_problems(store, ref) == []
        status = store.status(ref)
        assert status is not None and status.backlog == 0
        version, bodies = _feed_state(store, ref)
        page = store.read_state(ref)
        assert page is not None and version == status.version
        assert [decode_stored(b, m.id or "") for b, m in zip(bodies, page.messages,
                                                             strict=True)] == page.messages
