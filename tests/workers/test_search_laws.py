"""The laws of a paged search, by Hypothesis over a real Redis: paging through a search
with its cursors yields every thread the filter matches (by metadata and by status),
exactly once, in the search's order (latest first, ties by id descending), whatever
the page size, the buckets' walk budget (small here, so buckets stop at frontiers and
pages merge around them) and the number of buckets; a count is the number of matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, store_for
from threadfold import Client
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.threads import lifecycle


class _NoWake:
    def wake(self, refs: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as found:
        yield found


_THREADS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2), st.booleans(), st.booleans()),
    min_size=8,  # enough per bucket that small budgets stop at frontiers
    max_size=30,
)
_RUN = iter(range(10**9))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    threads=_THREADS,
    limit=st.integers(1, 7),
    budget=st.integers(1, 6),
    buckets=st.sampled_from([1, 3, 16]),
    wanted=st.sampled_from([{}, {"team": "a"}, {"team": "b", "n": 1}, {"flag": True}]),
    sort=st.sampled_from(["activity", "created"]),
    status=st.sampled_from([None, "idle", "busy"]),
)
def test_paging_a_search_yields_every_match_once_in_order(
    server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    threads: list[tuple[str, int, bool, bool]],
    limit: int,
    budget: int,
    buckets: int,
    wanted: dict[str, Any],
    sort: str,
    status: str | None,
) -> None:
    monkeypatch.setattr(lifecycle, "BUDGET", budget)
    config = make_settings(server.url, key_prefix=f"law{next(_RUN)}", buckets=buckets)
    store = store_for(config)
    with Client(settings=config, waker=_NoWake()) as client:
        names = []
        for i, (team, n, flag, drained) in enumerate(threads):
            name = f"t{i:02d}"
            client.append(name, [["user", "x"]], metadata={"team": team, "n": n, "flag": flag})
            if drained:  # idle, and active at its commit; the others stay busy
                Drainer(store, config).drain(f"_/{name}")
            names.append(name)
        order: dict[str, tuple[int, str]] = {}
        expected = []
        for name in names:
            found = client.status(name)
            assert found.created_ms is not None
            idle = found.backlog == 0
            held = all(found.metadata[k] == v for k, v in wanted.items())
            if held and status in (None, "idle" if idle else "busy"):
                expected.append(name)
            at = found.created_ms if sort == "created" or idle is False else found.last_commit_ms
            order[name] = (at or found.created_ms, name)
        expected.sort(key=lambda name: order[name], reverse=True)
        seen: list[str] = []
        cursor = None
        for _ in range(len(threads) + 2):  # every page advances, or the cursor ends
            page = client.search(
                metadata=wanted, status=status, limit=limit, sort=sort, cursor=cursor
            )
            assert len(page.threads) <= limit
            seen += [row.thread_id for row in page.threads]
            cursor = page.cursor
            if cursor is None:
                break
        assert cursor is None, "the search did not end"
        assert seen == expected
        assert client.count(metadata=wanted, status=status) == len(expected)
