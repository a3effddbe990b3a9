"""Every route refuses a query parameter it does not declare (400 naming it), as the
read routes always did: a write or lifecycle route declares none, so a ``?dry_run=true``
or ``?at_version=...`` is refused with nothing done, not silently ignored (a prune or a
delete that removed for real, a copy of the current state). The probes, /metrics and
/openapi.json declare none either (Prometheus sends none)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings


def _create(client: TestClient, thread: str) -> str:
    response = client.post(f"/threads/{thread}/deltas", json={"messages": [["user", thread]]})
    assert response.status_code == 202, response.text
    version: str = response.json()["version"]
    return version


def _refused(response: Any, name: str) -> None:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["field"]) == ("bad_request", name), error
    assert name in error["message"]


@pytest.mark.parametrize(
    ("method", "path", "body", "name"),
    [
        ("POST", "/threads/t/deltas?delta_id=x", {"messages": [["user", "x"]]}, "delta_id"),
        ("POST", "/deltas?wait=1", {"deltas": [{"thread_id": "t", "messages": ["x"]}]}, "wait"),
        ("DELETE", "/threads/t?dry_run=true", None, "dry_run"),
        ("PATCH", "/threads/t?pinned=true", {"metadata": {"a": 1}}, "pinned"),
        ("POST", "/threads/t/copy?at_version=1-0", {"to": "u"}, "at_version"),
        ("POST", "/threads/prune?dry_run=true", {"prefix": "t"}, "dry_run"),
        ("POST", "/threads/search?limit=1", {}, "limit"),
        ("POST", "/threads/count?status=idle", {}, "status"),
        ("GET", "/threads/t/status?format=openai", None, "format"),
    ],
)
def test_a_write_or_lifecycle_route_refuses_a_query_and_does_nothing(
    redis_url: str, method: str, path: str, body: dict[str, Any] | None, name: str
) -> None:
    with api_client(api_settings(redis_url, key_prefix="uq")) as client:
        version = _create(client, "t")
        before = client.get("/threads/t/status").json()
        response = client.request(method, path, json=body)
        _refused(response, name)
        after = client.get("/threads/t/status")
        assert after.status_code == 200, after.text  # not deleted, not pruned
        assert after.json() == before and after.json()["last_enqueued"] == version
        assert client.get("/threads/u/status").status_code == 404  # no copy was made


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/openapi.json"])
def test_probes_metrics_and_the_document_take_no_query(redis_url: str, path: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="uq")) as client:
        _refused(client.get(f"{path}?verbose=1"), "verbose")
        assert client.get(path).status_code in (200, 503)  # /readyz: no broker here


def test_a_query_is_refused_whatever_the_body(redis_url: str) -> None:
    # The query is the route's contract, checked before the body is read: an unknown
    # parameter beside a malformed body is named as the parameter.
    with api_client(api_settings(redis_url, key_prefix="uq")) as client:
        _refused(client.post(
            "/threads/t/deltas?x=1", content=b"{", headers={"content-type": "application/json"}
        ), "x")
