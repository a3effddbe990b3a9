"""A context read over real Redis: the pages it sends make the same window as the whole
state would, whatever appends, updates, removals, clears and chunks did to the pages
(each record's count is kept by the commit that writes it), and it sends only the pages
the window needs however long the thread is."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import make_settings, store_for
from threadfold.core.context import MESSAGE_TYPES, Span, Trim, sized, window
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import run, text
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage import context as context_script
from threadfold.workers.storage.context import Direction
from threadfold.workers.storage.layout import layout_problems
from threadfold.workers.storage.store import Store
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads.service import Threads


class NoWake:
    def wake(self, refs: object) -> None:
        pass


def _message(rnd: random.Random, n: int) -> dict[str, Any]:
    """A message of a random kind and size (ids from a small pool: updates happen)."""
    ident = f"m{rnd.randrange(n)}"
    kind = rnd.randrange(6)
    text = "x" * rnd.choice([0, 3, 40, 400, 3000])
    if kind == 0:
        return {"role": "assistant", "content": "", "id": ident,
                "tool_calls": [{"id": f"c-{ident}", "type": "function",
                                "function": {"name": "f", "arguments": "{}"}}]}
    if kind == 1:
        return {"role": "tool", "content": text, "tool_call_id": f"c-m{rnd.randrange(n)}",
                "id": ident}
    if kind == 2:
        return {"type": "AIMessageChunk", "content": text, "id": ident}
    if kind == 3:
        return {"role": "user", "content": [{"type": "text", "text": text},
                                             {"type": "image_url", "image_url": {"url": "u"}}],
                "id": ident}
    return {"role": rnd.choice(["user", "assistant"]), "content": text, "id": ident}


def _written(settings: Settings, store: Store, seed: int, deltas: int, pool: int) -> str:
    rnd = random.Random(seed)
    producer = Producer(store.client, settings, NoWake())
    thread = f"t{seed}"
    producer.enqueue(thread, [{"role": "system", "content": "sys", "id": "system"}])
    for _ in range(deltas):
        roll = rnd.random()
        if roll < 0.1:
            batch: list[Any] = [{"type": "remove", "id": f"m{rnd.randrange(pool)}",
                                 "content": ""} for _ in range(rnd.randrange(1, 20))]
        elif roll < 0.12:
            batch = [{"type": "remove", "id": "__remove_all__", "content": ""},
                     {"role": "system", "content": "again", "id": "system"}]
        else:
            batch = [_message(rnd, pool) for _ in range(rnd.randrange(1, 30))]
        producer.enqueue(thread, batch)
        if rnd.random() < 0.3:
            Drainer(store, settings).drain(f"_/{thread}")
    Drainer(store, settings).drain(f"_/{thread}")
    return thread


_TRIMS = st.builds(
    Trim,
    max_tokens=st.integers(1, 20_000),
    strategy=st.sampled_from(["last", "first"]),
    include_system=st.booleans(),
    start_on=st.lists(st.sampled_from(MESSAGE_TYPES), max_size=2).map(tuple),
    end_on=st.lists(st.sampled_from(MESSAGE_TYPES), max_size=2).map(tuple),
).filter(lambda t: t.strategy == "last" or not (t.include_system or t.start_on))


def _asked(thread: str, t: Trim) -> ops.ReadContext:
    return ops.ReadContext(
        thread_id=thread, max_tokens=t.max_tokens, strategy=t.strategy,
        include_system=t.include_system, start_on=list(t.start_on) or None,
        end_on=list(t.end_on) or None,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), trims=st.lists(_TRIMS, min_size=1, max_size=6))
def test_a_read_makes_the_window_the_whole_state_makes(
    redis_url: str, seed: int, trims: list[Trim]
) -> None:
    config = make_settings(redis_url)
    store = store_for(config)
    thread = _written(config, store, seed, deltas=40, pool=150)
    assert layout_problems(store, f"_/{thread}") == []  # every record's count is right
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    threads = Threads(config, Producer(store.client, config, NoWake()), store)
    for t in trims:
        expected = window(Span(sized(whole.messages)), t)
        got = threads.context("_", _asked(thread, t))
        assert [m["id"] for m in got.messages] == [i.message.id for i in expected.items]
        assert (got.tokens, got.adjusted, got.version) == (
            expected.tokens, expected.adjusted, whole.version)


def _pages_sent(store: Store, ref: str, direction: Direction, want: int) -> int:
    raw = run(store.client, context_script.call(store.keyspace.thread(ref), direction, want))
    return (len(raw) - 5) // 2 + (1 if int(raw[3]) >= 0 else 0)


def test_a_window_of_a_long_thread_reads_only_its_pages(redis_url: str) -> None:
    config = make_settings(redis_url)
    store = store_for(config)
    producer = Producer(store.client, config, NoWake())
    producer.enqueue("long", [{"role": "system", "content": "sys", "id": "s"}])
    for start in range(0, 20_000, 1_000):
        producer.enqueue("long", [{"role": "user", "content": "y" * 60, "id": f"u{i}"}
                                  for i in range(start, start + 1_000)])
    # a long run removed from the middle: the first page and the tail are far apart
    producer.enqueue("long", [{"type": "remove", "id": f"u{i}", "content": ""}
                              for i in range(100, 15_000)])
    Drainer(store, config).drain("_/long")
    per_page = int(text(store.client.hget(store.keyspace.thread("_/long").meta, "pp")))
    tokens = 3 + (60 + 4 + 3) // 4  # content, role "user", rounded up, + 3 a message
    for budget in (100, 1_000, 4_000):
        # the window's messages fill budget / tokens records: that many pages and one more
        # (the boundary), and the first page
        needed = -(-(budget // tokens + 1) // per_page) + 1
        assert _pages_sent(store, "_/long", "last", budget) <= needed + 1
        assert _pages_sent(store, "_/long", "first", budget) <= needed + 1
    threads = Threads(config, producer, store)
    got = threads.context(
        "_", ops.ReadContext(thread_id="long", max_tokens=1_000, include_system=True)
    )
    assert got.messages[0]["id"] == "s" and got.messages[-1]["id"] == "u19999"
    assert got.total == 20_000 - 14_900 + 1
    whole = store.read_state("_/long")
    assert whole is not None
    for t in (Trim(1_000, include_system=True), Trim(5, include_system=True),
              Trim(3_000, "first"), Trim(500, end_on=("system",)), Trim(10**6)):
        expected = window(Span(sized(whole.messages)), t)
        read = threads.context("_", _asked("long", t))
        assert [m["id"] for m in read.messages] == [i.message.id for i in expected.items]


def test_a_context_read_on_a_cluster(redis_cluster: RedisCluster) -> None:
    config = make_settings(redis_cluster.url, cluster=True, key_prefix="ctx")
    store = store_for(config)
    thread = _written(config, store, 7, deltas=20, pool=60)
    whole = store.read_state(f"_/{thread}")
    assert whole is not None
    threads = Threads(config, Producer(store.client, config, NoWake()), store)
    for t in (Trim(300), Trim(500, include_system=True, start_on=("human",)), Trim(200, "first")):
        expected = window(Span(sized(whole.messages)), t)
        got = threads.context("_", _asked(thread, t))
        assert [m["id"] for m in got.messages] == [i.message.id for i in expected.items]
