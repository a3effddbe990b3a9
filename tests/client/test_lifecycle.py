"""Thread lifecycle through every kind of client over the real stack: metadata at creation
and by update, TTL and pin, search with cursors, count, copy at a version, prune. Each
kind must give the same results and the same refusals, and a refused call must leave
what is stored as it was."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.client.kinds import new_thread
from threadfold import ClientProtocol, Conflict, Gone, InvalidInput, NotFound
from threadfold.workers.ingest.producer import Delta

WAIT = 20.0


def _msg(text: str, ident: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "user", "content": text}
    if ident:
        out["id"] = ident
    return out


def _settled(client: ClientProtocol, thread_id: str, version: str) -> None:
    client.wait_for(thread_id, version, WAIT)


def test_metadata_is_set_at_creation_and_changed_by_update(client: ClientProtocol) -> None:
    t = new_thread()
    client.append(t, [_msg("hi")], metadata={"user": "u1", "n": 2.0, "vip": True})
    status = client.status(t)
    assert status.metadata == {"n": 2, "user": "u1", "vip": True}  # 2.0 is stored as 2
    assert status.created_ms is not None and status.pinned is False
    # Metadata on a later append is not the thread's: an existing one changes by update.
    second = client.append(t, [_msg("again")], metadata={"user": "someone else"})
    assert client.status(t).metadata["user"] == "u1"
    _settled(client, t, second.version)
    after = client.update(t, metadata={"agent": "a7", "n": None})
    assert after.metadata == {"agent": "a7", "user": "u1", "vip": True}
    pinned = client.update(t, pinned=True, ttl_seconds=30)
    assert pinned.pinned is True and pinned.ttl_seconds == 30 and pinned.expires_at_ms is None
    own = client.update(t, pinned=False)
    assert own.expires_at_ms is not None  # idle 30 s from its last activity
    assert own.last_commit_ms is not None
    assert 29_000 <= own.expires_at_ms - own.last_commit_ms <= 30_000
    back = client.update(t, ttl_seconds=None)  # the deployment's default: forever here
    assert back.ttl_seconds is None and back.expires_at_ms is None


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"metadata": {"a": {"nested": 1}}}, "metadata.a"),
        ({"metadata": {"bad key": "x"}}, 'metadata["bad key"]'),
        ({"metadata": {"k": "x" * 600}}, "metadata.k"),
        ({"metadata": {f"k{i}": i for i in range(33)}}, "metadata"),
        ({"ttl_seconds": 0.5}, "ttl_seconds"),
        ({"ttl_seconds": 10**10}, "ttl_seconds"),
        ({"pinned": "yes"}, "pinned"),
    ],
)
def test_a_refused_update_names_its_field_and_changes_nothing(
    client: ClientProtocol, change: dict[str, Any], field: str
) -> None:
    t = new_thread()
    client.append(t, [_msg("hi")], metadata={"user": "u1"})
    before = client.status(t)
    with pytest.raises(InvalidInput) as refused:
        client.update(t, **change)
    assert refused.value.field == field
    after = client.status(t)
    assert (after.metadata, after.ttl_seconds, after.pinned) == (
        before.metadata,
        before.ttl_seconds,
        before.pinned,
    )


def test_the_stored_limits_are_checked_against_what_the_thread_holds(
    client: ClientProtocol,
) -> None:
    t = new_thread()
    client.append(t, [_msg("hi")], metadata={f"k{i}": i for i in range(30)})
    with pytest.raises(InvalidInput) as refused:
        client.update(t, metadata={"x1": 1, "x2": 2, "x3": 3})  # 33 keys in all
    assert refused.value.field == "metadata" and "33" in str(refused.value)
    assert len(client.status(t).metadata) == 30
    assert len(client.update(t, metadata={"k0": None, "x1": 1}).metadata) == 30


def test_update_of_a_missing_thread_is_404(client: ClientProtocol) -> None:
    with pytest.raises(NotFound):
        client.update(new_thread(), metadata={"a": "b"})


def test_search_pages_through_matches_latest_first_with_a_cursor(
    client: ClientProtocol,
) -> None:
    run = uuid.uuid4().hex[:8]
    made = []
    for i in range(7):
        t = new_thread()
        done = client.append(t, [_msg(str(i))], metadata={"run": run, "i": i})
        made.append((t, done.version))
    other = new_thread()
    client.append(other, [_msg("x")], metadata={"run": "other"})
    for t, version in made:
        _settled(client, t, version)
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = client.search(metadata={"run": run}, limit=3, cursor=cursor)
        seen += [row.thread_id for row in page.threads]
        pages += 1
        assert all(row.metadata["run"] == run for row in page.threads)
        if page.cursor is None:
            break
        cursor = page.cursor
    assert sorted(seen) == sorted(t for t, _ in made) and len(seen) == len(set(seen))
    assert pages >= 3
    created = client.search(metadata={"run": run}, sort="created", limit=10).threads
    # Latest first; threads created in the same millisecond by id, descending.
    order = [(r.created_ms or 0, r.thread_id) for r in created]
    assert order == sorted(order, reverse=True) and len(order) == 7
    assert client.count(metadata={"run": run}) == 7
    assert client.count(metadata={"run": run, "i": 3}) == 1
    assert client.count(metadata={"run": run}, status="quarantined") == 0
    assert client.count(metadata={"run": run}, status="idle") == 7
    assert [r.thread_id for r in client.search(metadata={"run": run, "i": 4}).threads] == [
        made[4][0]
    ]


@pytest.mark.parametrize(
    ("asked", "field"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 501}, "limit"),
        ({"sort": "name"}, "sort"),
        ({"status": "sleeping"}, "status"),
        ({"metadata": {"a": [1]}}, "metadata.a"),
        ({"cursor": "not-a-cursor"}, "cursor"),
    ],
)
def test_a_bad_search_names_its_field(
    client: ClientProtocol, asked: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        client.search(**asked)
    assert refused.value.field == field


def test_a_cursor_of_another_search_is_refused(client: ClientProtocol) -> None:
    run = uuid.uuid4().hex[:8]
    for i in range(3):
        client.append(new_thread(), [_msg(str(i))], metadata={"run": run})
    cursor = client.search(metadata={"run": run}, limit=1).cursor
    assert cursor is not None
    with pytest.raises(InvalidInput) as refused:
        client.search(metadata={"run": "else"}, limit=1, cursor=cursor)
    assert refused.value.field == "cursor"


def test_a_copy_is_the_source_now_with_its_own_log(client: ClientProtocol) -> None:
    # The stack keeps no applied entries (retention 0): a copy at an earlier version is
    # time travel's 410 here; copies at every version are checked against time travel
    # by the history model (tests/history, whose stack retains its logs).
    src = new_thread()
    v1 = client.append(src, [_msg("one", "m1")], metadata={"user": "u1"}).version
    client.append(src, [_msg("two", "m2")])
    v3 = client.append(src, [{"type": "remove", "id": "m1", "content": ""}]).version
    _settled(client, src, v3)
    live = client.state(src)
    to = new_thread()
    made = client.copy(src, to, metadata={"branch": "retry"})
    assert (made.thread_id, made.from_thread_id, made.from_version) == (to, src, v3)
    assert made.messages == 1
    _settled(client, to, made.version)
    assert client.state(to).messages == live.messages
    assert client.status(to).metadata == {"branch": "retry", "user": "u1"}
    # Its own log from then on: writes to the copy leave the source alone.
    client.append(to, [_msg("three", "m3")])
    assert [m["id"] for m in client.state(src).messages] == ["m2"]
    with pytest.raises(Gone) as gone:
        client.copy(src, new_thread(), at_version=v1)
    assert gone.value.field == "at_version"


def test_copy_refusals(client: ClientProtocol) -> None:
    src, taken = new_thread(), new_thread()
    version = client.append(src, [_msg("one")]).version
    client.append(taken, [_msg("mine")])
    _settled(client, src, version)
    with pytest.raises(Conflict) as exists:
        client.copy(src, taken)
    assert exists.value.field == "to"
    assert len(client.state(taken, min_version=None).messages) == 1  # untouched
    with pytest.raises(InvalidInput) as itself:
        client.copy(src, src)
    assert itself.value.field == "to"
    with pytest.raises(NotFound):
        client.copy(new_thread(), new_thread())
    with pytest.raises(NotFound):  # before the thread's first version
        client.copy(src, new_thread(), at_version="1-0")


def test_an_empty_state_copies_to_an_empty_thread(client: ClientProtocol) -> None:
    src = new_thread()
    client.append(src, [_msg("one", "m1")])
    version = client.append(src, [{"type": "remove", "id": "m1", "content": ""}]).version
    _settled(client, src, version)
    to = new_thread()
    made = client.copy(src, to)
    _settled(client, to, made.version)
    assert made.messages == 0 and client.state(to).messages == []


def test_prune_counts_then_removes_and_never_touches_pinned(client: ClientProtocol) -> None:
    prefix = f"p{uuid.uuid4().hex[:8]}-"
    for i in range(5):
        client.append(f"{prefix}{i}", [_msg(str(i))], metadata={"keep": i % 2 == 0})
    client.update(f"{prefix}0", pinned=True)
    assert client.prune(prefix=prefix, dry_run=True).removed == 4
    assert client.prune(prefix=prefix, metadata={"keep": False}).removed == 2
    assert client.prune(prefix=prefix).removed == 2
    assert client.status(f"{prefix}0").pinned
    for i in (1, 2, 3, 4):
        with pytest.raises(NotFound):
            client.status(f"{prefix}{i}")
    with pytest.raises(InvalidInput) as refused:
        client.prune(idle_seconds=-1)
    assert refused.value.field == "idle_seconds"


def test_a_bulk_creates_threads_with_their_metadata_or_none_at_all(
    client: ClientProtocol,
) -> None:
    a, b, c = new_thread(), new_thread(), new_thread()
    done = client.append_many(
        [
            {"thread_id": a, "messages": [_msg("a")], "metadata": {"user": "u1"}},
            Delta(b, [_msg("b")], metadata={"user": "u2", "n": 3}),
            (c, [_msg("c")]),  # a tuple carries no metadata
        ]
    )
    assert [d.thread_id for d in done] == [a, b, c]
    assert client.status(a).metadata == {"user": "u1"}
    assert client.status(b).metadata == {"n": 3, "user": "u2"}
    assert client.status(c).metadata == {}
    d, e = new_thread(), new_thread()
    with pytest.raises(InvalidInput) as refused:
        client.append_many(
            [
                {"thread_id": d, "messages": [_msg("d")], "metadata": {"ok": 1}},
                {"thread_id": e, "messages": [_msg("e")], "metadata": {"k": [1]}},
            ]
        )
    assert refused.value.field == "deltas[1].metadata.k"
    for name in (d, e):  # all checked before any is appended
        with pytest.raises(NotFound):
            client.status(name)
