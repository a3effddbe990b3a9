"""Time travel (``GET /threads/{id}/state?at_version=v``) through a real API process: the
exact state at the version, or 410 with the oldest version served, 404 for a version
of no incarnation of the thread now, 409 naming a poison entry; never a partial state,
whatever trims and deletes race the read."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.infra.processes import wait_until
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, state_dump, store_for
from tests.workers.replaying import NoWake, Oracle, Writer
from threadfold.core.codec import encode_messages
from threadfold.core.messages import HumanMessage
from threadfold.testing import version_key
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.redisio.client import text
from threadfold.workers.replay import prefix
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings
from threadfold.workers.storage.store import Store


@pytest.fixture(scope="module")
def api(
    redis_server_session: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One API process for the module, on the session's server (each test flushes it
    through ``redis_url``)."""
    process, url = start_api(
        make_settings(redis_server_session.url), tmp_path_factory.mktemp("travel")
    )
    try:
        yield url
    finally:
        process.kill()


def _at(client: httpx.Client, thread: str, version: str) -> httpx.Response:
    return client.get(f"/threads/{thread}/state", params={"at_version": version})


def _setup(redis_url: str, **overrides: Any) -> tuple[Settings, Store, Writer]:
    settings = make_settings(redis_url, **overrides)
    store = store_for(settings)
    return settings, store, Writer(Producer(store.client, settings, NoWake()))


def test_at_retention_0_the_live_version_and_later_are_served_and_earlier_ones_are_gone(
    redis_url: str, api: str
) -> None:
    settings, store, writer = _setup(redis_url)  # retention 0: every commit trims
    versions = [r[0] for r in writer.write("z", 10, "z")]
    Drainer(store, settings).drain("_/z")
    oracle = Oracle(writer.deltas("_/z"))
    with httpx.Client(base_url=api, timeout=30) as client:
        gone = _at(client, "z", versions[0])
        assert gone.status_code == 410, gone.text
        error = gone.json()["error"]
        assert (error["code"], error["field"]) == ("gone", "at_version")
        assert error["oldest_version"] == versions[-1]
        for asked in (versions[-1], "99999999999999-0", "18446744073709551615-0"):
            now = _at(client, "z", asked)
            assert now.status_code == 200, now.text
            body = now.json()
            assert body["version"] == versions[-1] and body["messages"] == oracle.at(versions[-1])
        # Entries not applied yet are folded onto the live state: the state at each.
        later = [r[0] for r in writer.write("z", 4, "y")]
        oracle = Oracle(writer.deltas("_/z"))
        for asked in later:
            body = _at(client, "z", asked).json()
            assert body["version"] == asked and body["messages"] == oracle.at(asked)
            assert body["total"] == len(body["messages"])
        assert _at(client, "z", versions[3]).status_code == 410


def test_a_version_of_a_deleted_incarnation_is_404_not_an_empty_state(
    redis_url: str, api: str
) -> None:
    settings, store, writer = _setup(redis_url, retention_seconds=3600)
    old = [r[0] for r in writer.write("d", 5, "d")]
    Drainer(store, settings).drain("_/d")
    assert store.delete("_/d")
    # Written again once Redis's clock is past the old versions: its first entry follows
    # them (in the same millisecond it could precede some, and they would name states
    # of the new thread).
    wait_until(lambda: int(store.client.time()[0]) * 1000 > version_key(old[-1])[0], 5)
    new = writer.write("d", 3, "e")
    Drainer(store, settings).drain("_/d")
    with httpx.Client(base_url=api, timeout=30) as client:
        for asked in (old[0], old[-1], "0-0", "1-1"):
            response = _at(client, "d", asked)
            assert response.status_code == 404, response.text
            error = response.json()["error"]
            assert error["field"] == "at_version" and error["first_version"] == new[0][0]
        body = _at(client, "d", new[1][0]).json()
        assert body["messages"] == Oracle(new).at(new[1][0])
        assert _at(client, "never", old[0]).status_code == 404


def test_a_poison_entry_at_or_before_the_version_is_409_naming_it(redis_url: str, api: str) -> None:
    settings, store, writer = _setup(redis_url, retention_seconds=3600, failure_limit=1)
    before = [r[0] for r in writer.write("p", 3, "p")]
    log = store.keyspace.thread("_/p").log
    poison = text(store.client.xadd(log, {"d": b"\xc1 not msgpack"}))
    after = [r[0] for r in writer.write("p", 1, "q")]
    assert Drainer(store, settings).drain("_/p").quarantined
    idless = encode_messages([HumanMessage(content="no id")])  # decodes; cannot be folded
    writer.write("u", 2, "u")
    unfoldable = text(store.client.xadd(store.keyspace.thread("_/u").log, {"d": idless}))
    with httpx.Client(base_url=api, timeout=30) as client:
        for thread, entry, asked in (
            ("p", poison, poison),
            ("p", poison, after[0]),
            ("u", unfoldable, unfoldable),
        ):
            response = _at(client, thread, asked)
            assert response.status_code == 409, response.text
            error = response.json()["error"]
            assert (error["code"], error["entry"], error["field"]) == (
                "poison_entry",
                entry,
                "at_version",
            )
        body = _at(client, "p", before[-1]).json()
        assert body["messages"] == state_dump(store, "_/p")  # the live state, held before it


def _backlog(store: Store, ref: str) -> int:
    status = store.status(ref)
    assert status is not None
    return status.backlog


def _check(
    response: httpx.Response,
    asked: str,
    oracles: list[Oracle],
    allowed: set[int],
    wrong: list[str],
) -> int:
    """The status; a 200 must be the state at ``asked`` of one of the thread's
    incarnations: the version of its last entry up to ``asked``, and the fold of its
    log up to there (a wrong one is recorded)."""
    if response.status_code != 200:
        if response.status_code not in allowed:
            wrong.append(f"{response.status_code}: {response.text[:200]}")
        return response.status_code
    body = response.json()
    version = body["version"]
    if not any(o.latest(asked) == version and o.at(version) == body["messages"] for o in oracles):
        wrong.append(f"200 for {asked} at {version} with {len(body['messages'])} messages")
    return 200


def _reading(
    api: str, pick: Callable[[random.Random], tuple[str, str, list[Oracle]]], allowed: set[int]
) -> tuple[Callable[[], None], list[int], list[str]]:
    """Three threads reading what ``pick`` asks (thread, version, its incarnations) and
    checking each answer, until the returned ``stop`` is called."""
    statuses: list[int] = []
    wrong: list[str] = []
    done = threading.Event()

    def read(seed: int) -> None:
        rng = random.Random(seed)
        with httpx.Client(base_url=api, timeout=30) as client:
            while not done.is_set():
                thread, asked, oracles = pick(rng)
                response = _at(client, thread, asked)
                statuses.append(_check(response, asked, oracles, allowed, wrong))

    readers = [threading.Thread(target=read, args=(n,)) for n in range(3)]
    for reader in readers:
        reader.start()

    def stop() -> None:
        done.set()
        for reader in readers:
            reader.join()

    return stop, statuses, wrong


def _reads_go_on(statuses: list[int], more: int) -> None:
    """Until the readers have answered ``more`` more reads."""
    reads = len(statuses)
    wait_until(lambda: len(statuses) >= reads + more, 30)


RACED = ("r0", "r1", "r2")


def test_reads_racing_commits_that_trim_are_exact_or_410(redis_url: str, api: str) -> None:
    """At retention 0, readers ask mostly for the newest version while a worker applies
    backlogs of several pages, each commit trimming what it applied: a read of the live
    state and the entries after it must not lose the ones a commit trims meanwhile."""
    _, store, writer = _setup(redis_url)
    # A commit of 1,100 entries trims past the first page a read takes with the live
    # state (1,000 entries): entries its later pages have yet to read.
    drainer = Drainer(store, make_settings(redis_url, batch_size=prefix.PAGE + 100))
    oracles = {thread: Oracle([]) for thread in RACED}

    def pick(rng: random.Random) -> tuple[str, str, list[Oracle]]:
        thread = rng.choice(RACED)
        oracle = oracles[thread]
        asked = oracle.deltas[-1] if rng.random() < 0.8 else rng.choice(oracle.deltas)
        return thread, asked[0], [oracle]

    def backlogs(n: int) -> None:
        for thread in RACED:
            records = writer.write(thread, 2 * prefix.PAGE + 600, f"{thread}-{n}")
            oracles[thread] = Oracle([*oracles[thread].deltas, *records])

    refs = [f"_/{thread}" for thread in RACED]
    backlogs(0)
    stop, statuses, wrong = _reading(api, pick, {410})
    try:
        for n in range(4):
            if n:
                backlogs(n)
            while any(_backlog(store, ref) for ref in refs):
                # One commit per thread (a deadline already past ends the drain after
                # one round), then reads before the next.
                drainer.drain_many(refs, deadline=0.0)
                _reads_go_on(statuses, 3)
    finally:
        stop()
    assert wrong == []
    assert statuses.count(200) > 10 and 410 in statuses


def test_reads_racing_deletes_are_a_whole_incarnation_or_404(redis_url: str, api: str) -> None:
    """Readers ask for versions in the middle of retained logs of several pages while
    the threads are deleted and written again: every 200 is the state of one incarnation
    at that version, never the first pages of a deleted one."""
    settings, store, writer = _setup(redis_url, retention_seconds=3600, batch_size=1000)
    size = 2 * prefix.PAGE + 500
    drainer = Drainer(store, settings)
    incarnations = {thread: [Oracle(writer.write(thread, size, thread))] for thread in RACED}
    drainer.drain_many([f"_/{thread}" for thread in RACED])

    def pick(rng: random.Random) -> tuple[str, str, list[Oracle]]:
        thread = rng.choice(RACED)
        known = list(incarnations[thread])
        asked = rng.choice(rng.choice(known).deltas[prefix.PAGE + 200 :])
        return thread, asked[0], known

    stop, statuses, wrong = _reading(api, pick, {404})
    try:
        for n in range(9):
            thread = RACED[n % len(RACED)]
            assert store.delete(f"_/{thread}")
            incarnations[thread].append(Oracle(writer.write(thread, size, f"{thread}-{n}")))
            drainer.drain(f"_/{thread}")
            _reads_go_on(statuses, 5)
    finally:
        stop()
    assert wrong == []
    assert statuses.count(200) > 10 and 404 in statuses
