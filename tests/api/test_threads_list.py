"""``GET /threads``: a tenant's threads, most recently active first, with backlog, lag and
quarantine, over a real redis-server (and a 3-master cluster), drained in-process."""

from __future__ import annotations

import json
import time
from typing import Any

from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from tests.infra.redis_cluster import RedisCluster
from tests.workers.harness import WORKERS_ONLY, make_settings, store_for
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.runtime.drain.batch import read_batch

TOKEN_A, TOKEN_B = "key-a-0123456789abcdef", "key-b-0123456789abcdef"


def _post(client: TestClient, thread: str, headers: dict[str, str] | None = None) -> str:
    response = client.post(
        f"/threads/{thread}/deltas", json={"messages": [["user", thread]]}, headers=headers
    )
    assert response.status_code == 202, response.text
    version: str = response.json()["version"]
    return version


def _listed(client: TestClient, query: str = "", **kw: Any) -> list[dict[str, Any]]:
    response = client.get(f"/threads{query}", **kw)
    assert response.status_code == 200, response.text
    threads: list[dict[str, Any]] = response.json()["threads"]
    return threads


def test_threads_are_listed_latest_first_with_backlog_lag_and_versions(redis_url: str) -> None:
    with api_client(api_settings(redis_url, **WORKERS_ONLY)) as client:
        versions = {name: _post(client, name) for name in ("first", "second", "third")}
        _post(client, "second")  # second is now the latest, with a backlog of 2
        time.sleep(0.02)  # the oldest unapplied delta has an age
        threads = _listed(client)
    assert [t["thread_id"] for t in threads] == ["second", "third", "first"]
    by_id = {t["thread_id"]: t for t in threads}
    assert by_id["second"]["backlog"] == 2 and by_id["first"]["backlog"] == 1
    assert by_id["first"]["version"] == "0-0" and by_id["first"]["messages"] == 0
    assert by_id["first"]["last_enqueued"] == versions["first"]
    assert by_id["first"]["lag_ms"] >= 20
    assert by_id["first"]["last_commit_ms"] is None and not by_id["first"]["quarantined"]
    assert by_id["first"]["last_activity_ms"] == int(versions["first"].split("-")[0])


def test_a_drained_thread_is_listed_with_its_commit_and_no_lag(redis_url: str) -> None:
    settings = api_settings(redis_url, **WORKERS_ONLY)
    with api_client(settings) as client:
        version = _post(client, "drained")
        Drainer(store_for(make_settings(redis_url)), make_settings(redis_url)).drain("_/drained")
        time.sleep(0.005)  # the list orders by ms: the later append in a later millisecond
        _post(client, "pending")
        [pending, drained] = _listed(client)
    assert pending["thread_id"] == "pending" and pending["lag_ms"] is not None
    assert drained["thread_id"] == "drained", "a committed thread without backlog is listed"
    assert drained["version"] == version and drained["messages"] == 1
    assert drained["backlog"] == 0 and drained["lag_ms"] is None
    assert drained["last_commit_ms"] >= int(version.split("-")[0])
    assert drained["last_activity_ms"] == drained["last_commit_ms"]


def test_a_quarantined_thread_is_listed_with_its_reason(redis_url: str) -> None:
    with api_client(api_settings(redis_url, **WORKERS_ONLY)) as client:
        version = _post(client, "sick")
        _post(client, "well")
        store = store_for(make_settings(redis_url))
        fence = read_batch(store, "_/sick", 200).fence
        assert store.fail("_/sick", 0, "cannot decode entry", version, 0, fence=fence)
        by_id = {t["thread_id"]: t for t in _listed(client)}
    assert by_id["sick"]["quarantined"] and by_id["sick"]["quarantine_reason"] == (
        "cannot decode entry"
    )
    assert by_id["sick"]["backlog"] == 1
    assert not by_id["well"]["quarantined"] and by_id["well"]["quarantine_reason"] is None


def test_limit_takes_the_latest_and_bad_queries_are_refused(redis_url: str) -> None:
    with api_client(api_settings(redis_url)) as client:
        for n in range(5):
            _post(client, f"t{n}")
        assert [t["thread_id"] for t in _listed(client, "?limit=2")] == ["t4", "t3"]
        assert _listed(client, "?limit=0") == []
        for query in ("?limit=501", "?limit=-1", "?limit=x", "?after=t1", "?limit=1&limit=2"):
            response = client.get(f"/threads{query}")
            assert response.status_code == 400, (query, response.text)
            assert response.json()["error"]["code"] == "bad_request"
        client.delete("/threads/t4")
        assert [t["thread_id"] for t in _listed(client, "?limit=2")] == ["t3", "t2"]


def test_a_tenant_lists_only_its_own_threads(redis_url: str) -> None:
    keys = json.dumps({TOKEN_A: "acme", TOKEN_B: "globex"})
    a, b = {"authorization": f"Bearer {TOKEN_A}"}, {"authorization": f"Bearer {TOKEN_B}"}
    with api_client(api_settings(redis_url, api_keys=keys)) as client:
        _post(client, "shared", a)
        _post(client, "acme-only", a)
        _post(client, "shared", b)
        assert {t["thread_id"] for t in _listed(client, headers=a)} == {"shared", "acme-only"}
        assert [t["thread_id"] for t in _listed(client, headers=b)] == ["shared"]
        assert client.get("/threads").status_code == 401


def test_threads_are_listed_from_a_cluster(redis_cluster: RedisCluster) -> None:
    """Every bucket's part goes to its own slot's node (three masters here)."""
    settings = api_settings(redis_cluster.url, cluster=True, key_prefix="tl")
    names = [f"c{n}" for n in range(12)]  # over many buckets, so over every node
    with api_client(settings) as client:
        for name in names:
            _post(client, name)
        listed = _listed(client, "?limit=500")
    assert [t["thread_id"] for t in listed if t["thread_id"] in names] == names[::-1]
