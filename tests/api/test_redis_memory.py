"""The HTTP API over a Redis out of memory, and over one whose policy evicts keys.

A full Redis (over ``maxmemory``, policy ``noeviction``) refuses writes: the API says so
with a retryable 503 ``redis_full``, never a 500, and ``/readyz`` gives the reason. An
evicting policy set while the API runs fails ``/readyz``, naming the policy and the fix.
"""

from __future__ import annotations

from typing import Any

from tests.api.client import api_client, api_settings
from tests.infra.redis_server import RedisServer
from tests.workers.harness import WORKERS_ONLY


def fill(server: RedisServer) -> None:
    """Put Redis over its limit, as writes that filled it would: maxmemory under what
    it uses (it has nothing to evict under noeviction, so it refuses writes)."""
    with server.probe() as admin:
        admin.config_set("maxmemory", int(admin.info("memory")["used_memory"]) // 2)


def free(server: RedisServer) -> None:
    with server.probe() as admin:
        admin.config_set("maxmemory", 0)


def test_a_full_redis_answers_writes_503_redis_full_with_retry_after_and_readyz_says_why(
    redis_server: RedisServer,
) -> None:
    with api_client(api_settings(redis_server.url, **WORKERS_ONLY)) as client:
        first = client.post("/threads/t/deltas", json={"messages": ["kept"], "delta_id": "a"})
        assert first.status_code == 202
        fill(redis_server)
        writes: list[tuple[str, dict[str, Any]]] = [
            ("/threads/t/deltas", {"messages": ["refused"], "delta_id": "b"}),
            ("/deltas", {"deltas": [{"thread_id": "u", "messages": ["refused"]}]}),
        ]
        for path, body in writes:
            refused = client.post(path, json=body)
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "5"
            error = refused.json()["error"]
            assert error["code"] == "redis_full" and error["status"] == 503
            assert "maxmemory" in error["message"] and "same delta_id" in error["message"]
        ready = client.get("/readyz")
        assert ready.status_code == 503
        error = ready.json()["error"]
        assert error["reasons"] == ["redis_full"]
        assert "the state Redis is full" in error["message"]
        # Reads go on: only writes that may grow memory are refused.
        state = client.get("/threads/t/state")
        assert state.status_code == 200 and state.json()["version"] == "0-0"
        assert client.get("/threads/t/status").json()["backlog"] == 1

        free(redis_server)
        retried = client.post("/threads/t/deltas", json={"messages": ["refused"], "delta_id": "b"})
        assert retried.status_code == 202 and retried.json()["duplicate"] is False
        assert client.get("/threads/t/status").json()["backlog"] == 2
        assert client.get("/readyz").status_code == 200


def test_an_evicting_policy_set_at_run_time_fails_readyz_naming_the_policy_and_the_fix(
    redis_server: RedisServer,
) -> None:
    with api_client(api_settings(redis_server.url)) as client:
        assert client.get("/readyz").json() == {"ok": True, "redis": True, "broker": True}
        with redis_server.probe() as admin:
            admin.config_set("maxmemory-policy", "allkeys-lru")
        ready = client.get("/readyz")
        assert ready.status_code == 503
        error = ready.json()["error"]
        assert error["reasons"] == ["redis_evicting"]
        assert "maxmemory-policy allkeys-lru" in error["message"]
        assert "set maxmemory-policy noeviction" in error["message"]
        with redis_server.probe() as admin:
            admin.config_set("maxmemory-policy", "noeviction")
        assert client.get("/readyz").status_code == 200
