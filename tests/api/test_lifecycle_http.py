"""The lifecycle routes over HTTP (in-process API, real redis-server): bodies refused
with a precise 4xx naming the field and nothing stored changed; tenants see, change,
copy and prune only their own threads; the status and the list show the lifecycle."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from tests.workers.harness import make_settings, store_for
from threadfold.workers.runtime.drain import Drainer

TOKEN_A, TOKEN_B = "key-a-0123456789abcdef", "key-b-0123456789abcdef"
A, B = {"authorization": f"Bearer {TOKEN_A}"}, {"authorization": f"Bearer {TOKEN_B}"}


def _create(client: TestClient, thread: str, headers: dict[str, str], **body: Any) -> str:
    response = client.post(
        f"/threads/{thread}/deltas",
        json={"messages": [["user", thread]], **body},
        headers=headers,
    )
    assert response.status_code == 202, response.text
    version: str = response.json()["version"]
    return version


def _status(client: TestClient, thread: str, headers: dict[str, str]) -> dict[str, Any]:
    response = client.get(f"/threads/{thread}/status", headers=headers)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("PATCH", "/threads/t", {"metadata": {"a": 1}, "ttl": 5}, "ttl"),
        ("PATCH", "/threads/t", {"pinned": "yes"}, "pinned"),
        ("PATCH", "/threads/t", {"ttl_seconds": "60"}, "ttl_seconds"),
        ("PATCH", "/threads/t", {"ttl_seconds": 0}, "ttl_seconds"),
        ("PATCH", "/threads/t", {"ttl_seconds": 10**9}, "ttl_seconds"),
        ("PATCH", "/threads/t", {"metadata": ["a"]}, "metadata"),
        ("PATCH", "/threads/t", {"metadata": {"a": None, "b": {"c": 1}}}, "metadata.b"),
        ("PATCH", "/threads/t", {"metadata": {"big": "x" * 1000}}, "metadata.big"),
        ("POST", "/threads/search", {"metadata": {"a": 1}, "order": "x"}, "order"),
        ("POST", "/threads/search", {"limit": "5"}, "limit"),
        ("POST", "/threads/search", {"cursor": 5}, "cursor"),
        ("POST", "/threads/count", {"limit": 5}, "limit"),
        ("POST", "/threads/t/copy", {}, "to"),
        ("POST", "/threads/t/copy", {"to": "t"}, "to"),
        ("POST", "/threads/t/copy", {"to": "a/b"}, "to"),
        ("POST", "/threads/t/copy", {"to": "u", "at_version": "v1"}, "at_version"),
        ("POST", "/threads/t/copy", {"to": "u", "extra": 1}, "extra"),
        ("POST", "/threads/prune", {"idle_seconds": -5}, "idle_seconds"),
        ("POST", "/threads/prune", {"dry_run": "yes"}, "dry_run"),
        ("POST", "/threads/prune", {"tenant": "other"}, "tenant"),
        ("POST", "/threads/t/deltas", {"messages": [["user", "x"]], "metadata": {"k": None}},
         "metadata.k"),
    ],
)
def test_a_refused_body_names_its_field_and_changes_nothing(
    redis_url: str, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    with api_client(api_settings(redis_url, key_prefix="lh")) as client:
        _create(client, "t", {}, metadata={"user": "u1"})
        before = _status(client, "t", {})
        response = client.request(method, path, json=body)
        assert 400 <= response.status_code < 500, response.text
        assert response.json()["error"]["field"] == field, response.text
        after = _status(client, "t", {})
        assert after == before
        assert client.get("/threads/u/status").status_code == 404  # no copy was made


def test_tenants_see_and_change_only_their_own_threads(redis_url: str) -> None:
    keys = json.dumps({TOKEN_A: "acme", TOKEN_B: "globex"})
    with api_client(api_settings(redis_url, api_keys=keys, key_prefix="lt")) as client:
        _create(client, "shared", A, metadata={"user": "u1"})
        _create(client, "shared", B, metadata={"user": "u1"})
        _create(client, "b-only", B, metadata={"user": "u1"})
        found = client.post("/threads/search", json={"metadata": {"user": "u1"}}, headers=A)
        assert [t["thread_id"] for t in found.json()["threads"]] == ["shared"]
        counted = client.post("/threads/count", json={"metadata": {"user": "u1"}}, headers=B)
        assert counted.json() == {"count": 2}
        assert client.patch("/threads/b-only", json={"pinned": True}, headers=A).status_code == 404
        copy = client.post("/threads/b-only/copy", json={"to": "mine"}, headers=A)
        assert copy.status_code == 404
        pruned = client.post("/threads/prune", json={"prefix": "shared"}, headers=A)
        assert pruned.json() == {"removed": 1, "dry_run": False}
        assert _status(client, "shared", B)["metadata"] == {"user": "u1"}
        assert client.get("/threads/shared/status", headers=A).status_code == 404


def test_status_and_the_list_show_metadata_ttl_pin_and_expiry(redis_url: str) -> None:
    settings = api_settings(redis_url, key_prefix="ls", thread_ttl_seconds=3600)
    with api_client(settings) as client:
        _create(client, "t", {}, metadata={"user": "u1", "score": 0.5})
        Drainer(store_for(make_settings(redis_url, key_prefix="ls")), settings).drain("_/t")
        status = _status(client, "t", {})
        assert status["metadata"] == {"score": 0.5, "user": "u1"}
        assert status["ttl_seconds"] is None and status["pinned"] is False
        assert status["expires_at_ms"] == status["last_commit_ms"] + 3600 * 1000
        changed = client.patch("/threads/t", json={"ttl_seconds": 60, "pinned": True}).json()
        assert changed["pinned"] and changed["ttl_seconds"] == 60
        assert changed["expires_at_ms"] is None  # pinned: never
        [row] = client.get("/threads").json()["threads"]
        assert row["metadata"] == status["metadata"] and row["pinned"] is True
        unpinned = client.patch("/threads/t", json={"pinned": False}).json()
        assert unpinned["expires_at_ms"] == status["last_commit_ms"] + 60 * 1000
        assert client.patch("/threads/nope", json={"pinned": True}).status_code == 404
        assert client.patch("/threads/t", json={}).json() == unpinned  # nothing to change
