"""Replay reads one consistent prefix of a log (threadfold.workers.replay.prefix): a trim or a
delete that
races an audit or a rebuild makes the thread not replayable (or the read is retried),
never a comparison with, or a rebuild from, a partial log; a log trimmed at retention 0
is known as such; a poison entry is named."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import WORKERS_ONLY, make_settings, state_dump, store_for
from tests.workers.replaying import NoWake, Oracle, Writer
from threadfold.core import dump_messages
from threadfold.core.codec import encode_messages
from threadfold.core.messages import HumanMessage
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import Call, async_client, run, run_many, text
from threadfold.workers.replay import prefix
from threadfold.workers.replay.replay import (
    Audit,
    NotReplayable,
    Reason,
    atravel,
    audit,
    audit_many,
    rebuild,
    rebuild_many,
    replay,
    state_of,
)
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import rebuild as rebuild_script
from threadfold.workers.storage.astore import AsyncStore
from threadfold.workers.storage.meta import fence
from threadfold.workers.storage.store import Store


def _stored(store: Store, ref: str) -> dict[str, Any]:
    """Everything a rebuild could change: the thread's meta, pages and index."""
    k = store.keyspace.thread(ref)
    return {key: store.client.hgetall(key) for key in (k.meta, k.pages, k.index)}


def _setup(redis_url: str, **overrides: Any) -> tuple[Settings, Store, Writer]:
    settings = make_settings(redis_url, **overrides)
    store = store_for(settings)
    return settings, store, Writer(Producer(store.client, settings, NoWake()))


def test_a_log_trimmed_at_retention_0_is_not_replayable_once_retention_is_on(
    redis_url: str,
) -> None:
    """The destructive rebuild of issue 14: written at the default retention 0, then with
    retention on (as the docs say to do before recomputing), a thread's log holds only
    the entries since; it must not be compared with, let alone replaced by, their fold."""
    settings, store, writer = _setup(redis_url)  # retention 0: each commit trims
    writer.write("a", 35, "a")
    Drainer(store, settings).drain("_/a")
    kept = make_settings(redis_url, retention_seconds=3600)
    writer.write("a", 5, "b")
    Drainer(store, kept).drain("_/a")
    version = writer.deltas("_/a")[-1][0]
    before = _stored(store, "_/a")

    [found] = audit_many(store, ["_/a"])
    assert isinstance(found, NotReplayable) and found.reason is Reason.TRIMMED
    assert found.oldest_version == version  # the live version: nothing before it replays
    with pytest.raises(NotReplayable) as caught:
        rebuild(store, "_/a")
    assert caught.value.reason is Reason.TRIMMED
    with pytest.raises(NotReplayable, match="retention trimmed its log"):
        replay(store, "_/a", version)
    assert _stored(store, "_/a") == before  # untouched: no rebuild, no generation bump
    assert len(state_dump(store, "_/a")) > 5


def test_a_whole_log_replays_after_retention_trims_nothing_yet(redis_url: str) -> None:
    """With retention on from the start the log is whole: audit matches, and a rebuild
    of a corrupted state restores the fold."""
    settings, store, writer = _setup(redis_url, retention_seconds=3600)
    writer.write("w", 40, "w")
    Drainer(store, settings).drain("_/w")
    found = audit(store, "_/w")
    assert found.differences == [] and found.entries == 40
    expected = Oracle(writer.deltas("_/w")).at(found.version)
    k = store.keyspace.thread("_/w")
    store.client.hdel(k.pages, "0")  # the first page lost behind the workers' back
    [damaged] = audit_many(store, ["_/w"])
    assert isinstance(damaged, Audit) and damaged.differences and damaged.added > 0
    [fixed] = rebuild_many(store, ["_/w"])
    assert isinstance(fixed, Audit) and fixed.rebuilt and fixed.differences
    assert state_dump(store, "_/w") == expected
    assert audit(store, "_/w").differences == []


def test_an_audit_racing_trims_and_deletes_never_reports_a_false_difference(
    redis_url: str,
) -> None:
    """Threads of three pages of log each are audited over and over while, one after
    another, each is trimmed for the first time (a commit at retention 0) or deleted
    and written again. Every audit either matches or says why it cannot replay."""
    # The trims are the workers' (a commit at retention 0 below): appends wait for them.
    settings, store, writer = _setup(
        redis_url, retention_seconds=3600, batch_size=1000, **WORKERS_ONLY
    )
    threads = [f"r{i}" for i in range(12)]
    for thread in threads:
        writer.write(thread, 2 * prefix.PAGE + 300, thread)
    drainer = Drainer(store, settings)
    refs = [f"_/{t}" for t in threads]
    drainer.drain_many(refs)
    trimming = Drainer(store, make_settings(redis_url, batch_size=1000))  # retention 0
    outcomes: list[Audit | NotReplayable] = []
    mutated = threading.Event()

    def mutate() -> None:
        try:
            for n, thread in enumerate(threads):
                if n % 2:  # deleted and written again (its log is whole again)
                    store.delete(f"_/{thread}")
                    writer.write(thread, prefix.PAGE + 300, f"{thread}x")
                    drainer.drain(f"_/{thread}")
                else:  # one more delta, applied by a commit that trims the whole log
                    writer.write(thread, 1, f"{thread}y")
                    trimming.drain(f"_/{thread}")
        finally:
            mutated.set()

    mutator = threading.Thread(target=mutate)
    mutator.start()
    while not mutated.is_set() or len(outcomes) < 3 * len(refs):
        outcomes += audit_many(store, refs)
    mutator.join()
    differing = [o for o in outcomes if isinstance(o, Audit) and o.differences]
    assert differing == []
    reasons = {o.reason for o in outcomes if isinstance(o, NotReplayable)}
    assert reasons <= {Reason.TRIMMED, Reason.DELETED, Reason.NEVER_WRITTEN, Reason.MOVING}
    assert Reason.TRIMMED in reasons  # the trims were seen, as trims
    assert any(isinstance(o, Audit) for o in outcomes)


def test_a_poison_entry_is_named_by_replay_and_leaves_the_audit_of_the_live_state(
    redis_url: str,
) -> None:
    settings, store, writer = _setup(redis_url, retention_seconds=3600, failure_limit=1)
    writer.write("p", 4, "p")
    Drainer(store, settings).drain("_/p")
    log = store.keyspace.thread("_/p").log
    undecodable = text(store.client.xadd(log, {"d": b"\xc1 not msgpack"}))
    writer.write("p", 1, "q")
    with pytest.raises(NotReplayable) as caught:
        replay(store, "_/p")
    assert caught.value.reason is Reason.POISON and caught.value.entry == undecodable
    # The live state stops before the entry, and so does the audit's replay.
    assert Drainer(store, settings).drain("_/p").quarantined
    assert audit(store, "_/p").differences == []

    idless = encode_messages([HumanMessage(content="no id")])  # decodes, cannot be folded
    writer.write("p3", 2, "p3")
    unfoldable = text(store.client.xadd(store.keyspace.thread("_/p3").log, {"d": idless}))
    with pytest.raises(NotReplayable) as caught:
        replay(store, "_/p3")
    assert caught.value.reason is Reason.POISON and caught.value.entry == unfoldable
    assert "cannot be folded" in str(caught.value)


def test_a_rebuild_is_fenced_by_the_incarnation_not_only_the_cursor(redis_url: str) -> None:
    """A rebuild computed before a DELETE and a rewrite is refused, even where the new
    thread's cursor equals the old one (which a delete makes possible: Redis forgets a
    deleted stream's last id)."""
    settings, store, writer = _setup(redis_url, retention_seconds=3600)
    writer.write("f", 3, "f")
    Drainer(store, settings).drain("_/f")
    k = store.keyspace.thread("_/f")
    c, g, i = store.client.hmget(k.meta, ["c", "g", "i"])
    old = fence(c, g, i)
    store.delete("_/f")
    writer.write("f", 2, "g")
    Drainer(store, settings).drain("_/f")
    store.client.hset(k.meta, "c", text(c))  # the old cursor, as a clash would give
    before = _stored(store, "_/f")
    assert run(store.client, Call(rebuild_script.SCRIPT, [k.meta, *k.state], [old, 0, 0])) == 0
    assert _stored(store, "_/f") == before


def _round(store: Store, read: prefix.PrefixRead) -> None:
    read.feed(run_many(store.client, read.calls()))


def test_a_trim_past_what_a_read_took_between_its_pages_makes_it_read_again(
    redis_url: str,
) -> None:
    """Deterministically, what the racing tests hit by chance: time travel to the newest
    version reads the live state with the first page after it, then the next pages; a
    commit in between that trims only entries the read already took changes nothing, one
    that trims past them (entries not yet read) makes the read start again."""
    _, store, writer = _setup(redis_url)  # retention 0: a commit trims what it applied
    writer.write("m", 2 * prefix.PAGE + 500, "m")
    newest = writer.deltas("_/m")[-1][0]
    oracle = Oracle(writer.deltas("_/m"))

    def commit(entries: int) -> None:  # one commit of the first `entries` of the backlog
        Drainer(store, make_settings(redis_url, batch_size=entries)).drain("_/m", deadline=0.0)

    read = prefix.PrefixRead(store.keyspace, "_/m", "travel", newest, first_page=prefix.PAGE)
    _round(store, read)
    commit(300)  # within the first page
    while read.result is None:
        _round(store, read)
    assert read.result.version == newest and read.result.live
    assert dump_messages(state_of(read.result)) == oracle.at(newest)

    read = prefix.PrefixRead(store.keyspace, "_/m", "travel", newest, first_page=prefix.PAGE)
    _round(store, read)
    assert read.result is None
    commit(prefix.PAGE + 100)  # past it: the first entries of the second page go
    with pytest.raises(prefix.Moved, match="trimmed"):
        _round(store, read)
    [again] = prefix.read_many(
        store.client,
        ["_/m"],
        lambda r: prefix.PrefixRead(store.keyspace, r, "travel", newest, first_page=prefix.PAGE),
    )
    assert isinstance(again, prefix.Prefix)
    assert dump_messages(state_of(again)) == oracle.at(newest)


def test_a_delete_between_the_pages_of_a_read_makes_it_read_again(redis_url: str) -> None:
    settings, store, writer = _setup(redis_url, retention_seconds=3600, batch_size=1000)
    writer.write("n", 2 * prefix.PAGE + 500, "n")
    Drainer(store, settings).drain("_/n")
    middle = writer.deltas("_/n")[prefix.PAGE + 700][0]  # before the cursor: the log path
    read = prefix.PrefixRead(store.keyspace, "_/n", "travel", middle, first_page=prefix.PAGE)
    _round(store, read)
    assert read.result is None
    store.delete("_/n")
    writer.write("n", 5, "o")  # born again
    with pytest.raises(prefix.Moved, match="deleted"):
        _round(store, read)
    Drainer(store, settings).drain("_/n")
    read = prefix.PrefixRead(store.keyspace, "_/n", "audit")  # its pages come after
    _round(store, read)
    assert read.result is None
    store.delete("_/n")
    with pytest.raises(prefix.Moved, match="deleted"):
        _round(store, read)
    [gone] = prefix.read_many(
        store.client, ["_/n"], lambda r: prefix.PrefixRead(store.keyspace, r, "audit")
    )
    assert isinstance(gone, NotReplayable) and gone.reason is Reason.NEVER_WRITTEN


def test_replay_and_time_travel_read_a_cluster_node_by_node(redis_cluster: RedisCluster) -> None:
    """On a Redis Cluster the reads go to each thread's node (every key of a thread is in
    its bucket's slot), pipelined per node, in order; the asyncio store's too."""
    settings, store, writer = _setup(
        redis_cluster.url, cluster=True, key_prefix="rp", retention_seconds=3600, batch_size=1000
    )
    threads = [f"c{i}" for i in range(6)]
    for thread in threads:
        writer.write(thread, prefix.PAGE + 300 if thread == "c0" else 40, thread)
    refs = [f"_/{t}" for t in threads]
    Drainer(store, settings).drain_many(refs)
    expected = {ref: state_dump(store, ref) for ref in refs}
    for ref in refs:
        k = store.keyspace.thread(ref)
        store.client.hdel(k.pages, min(store.client.hkeys(k.pages), key=int))
    found = rebuild_many(store, refs)
    assert all(isinstance(f, Audit) and f.rebuilt for f in found), found
    assert {ref: state_dump(store, ref) for ref in refs} == expected
    assert all(isinstance(f, Audit) and not f.differences for f in audit_many(store, refs))

    middle = writer.deltas("_/c0")[prefix.PAGE + 100][0]  # the log path, two pages

    async def travel() -> list[dict[str, Any]]:
        client = async_client(redis_cluster.url, cluster=True)
        try:
            page = await atravel(
                AsyncStore(client, settings.keyspace), "_/c0", middle, merge_chunks=False
            )
        finally:
            await client.aclose()
        assert page.version == middle
        return dump_messages(page.messages)

    assert asyncio.run(travel()) == Oracle(writer.deltas("_/c0")).at(middle)
