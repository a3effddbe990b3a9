"""The laws of a paged search, by Hypothesis over a real Redis: paging through a search
with its cursors yields every thread the filter matches, exactly once, in the search's
order (latest first, ties by id descending), whatever the page size, the buckets'
walk budget (small here, so buckets stop at frontiers and pages merge around them)
and the number of buckets; a count is the number of matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings
from threadfold import Client
from threadfold.workers.threads import lifecycle


class _NoWake:
    def wake(self, refs: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    with RedisServer() as found:
        yield found


_THREADS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2), st.booleans()),
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
)
def test_paging_a_search_yields_every_match_once_in_order(
    server: RedisServer,
    monkeypatch: pytest.MonkeyPatch,
    threads: list[tuple[str, int, bool]],
    limit: int,
    budget: int,
    buckets: int,
    wanted: dict[str, Any],
    sort: str,
) -> None:
    monkeypatch.setattr(lifecycle, "BUDGET", budget)
    config = make_settings(server.url, key_prefix=f"law{next(_RUN)}", buckets=buckets)
    with Client(settings=config, waker=_NoWake()) as client:
        expected = []
        for i, (team, n, flag) in enumerate(threads):
            metadata = {"team": team, "n": n, "flag": flag}
            client.append(f"t{i:02d}", [["user", "x"]], metadata=metadata)
            if all(metadata[k] == v for k, v in wanted.items()):
                expected.append(f"t{i:02d}")
        order: dict[str, tuple[int, str]] = {}
        for name in expected:
            status = client.status(name)
            assert status.created_ms is not None
            order[name] = (status.created_ms, name)  # never committed: activity = creation
        expected.sort(key=lambda name: order[name], reverse=True)
        seen: list[str] = []
        cursor = None
        for _ in range(len(threads) + 2):  # every page advances, or the cursor ends
            page = client.search(metadata=wanted, limit=limit, sort=sort, cursor=cursor)
            assert len(page.threads) <= limit
            seen += [row.thread_id for row in page.threads]
            cursor = page.cursor
            if cursor is None:
                break
        assert cursor is None, "the search did not end"
        assert seen == expected
        assert client.count(metadata=wanted) == len(expected)
