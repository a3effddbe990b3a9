"""The HTTP contract: every bad request gets its status and a message naming the field;
nothing is appended by a refused request; auth and tenants; paging; read-your-writes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from tests.workers.harness import WORKERS_ONLY, make_settings, store_for
from threadfold.workers.runtime.drain import Drainer

TOKEN_A, TOKEN_B = "a" * 24, "b" * 24

BAD_REQUESTS: list[tuple[str, str, dict[str, Any], int, str, str | None]] = [
    # (method, path, request kwargs, status, message starts with / contains, field)
    (
        "POST",
        "/threads/t/deltas",
        {"content": b"{not json", "headers": {"content-type": "application/json"}},
        400,
        "the body is not valid JSON",
        None,
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"content": b"x=1", "headers": {"content-type": "text/plain"}},
        415,
        "send the body as application/json, not text/plain",
        None,
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": [{"role": "critic", "content": "x"}]}},
        422,
        "messages[0].type: unknown message type 'critic'",
        "messages[0].type",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": [{"role": "tool", "content": "x"}]}},
        422,
        "messages[0].tool_call_id: tool message needs 'tool_call_id'",
        "messages[0].tool_call_id",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {
            "json": {
                "messages": [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {"id": "c", "function": {"name": "f", "arguments": "{oops"}}
                        ],
                    }
                ]
            }
        },
        422,
        "messages[0].tool_calls[0].function.arguments: arguments are not valid JSON",
        "messages[0].tool_calls[0].function.arguments",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": [{"type": "remove", "content": ""}]}},
        422,
        "messages[0].id: remove message needs an 'id'",
        "messages[0].id",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": [{"role": "user", "content": "x", "id": True}]}},
        422,
        "messages[0].id: expected a string",
        "messages[0].id",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": "hi"}},
        422,
        "messages: expected 'array', got 'str'",
        "messages",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": []}},
        422,
        "messages: expected a non-empty list of messages",
        "messages",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": ["x"], "extra": 1}},
        422,
        "extra: unknown field",
        "extra",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": ["x"], "delta_id": ""}},
        422,
        "delta_id: expected a string of 1 to 200 characters",
        "delta_id",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {"json": {"messages": ["x"] * 6}},
        422,
        "messages: at most 5 messages per delta",
        "messages",
    ),
    (
        "POST",
        "/threads/bad%20id/deltas",
        {"json": {"messages": ["x"]}},
        422,
        "thread id must be 1 to 128 characters",
        "thread_id",
    ),
    (
        "POST",
        "/threads/" + "x" * 129 + "/deltas",
        {"json": {"messages": ["x"]}},
        422,
        "thread id must be 1 to 128 characters",
        "thread_id",
    ),
    (
        "POST",
        "/threads/t/deltas",
        {
            "content": b'{"messages": ["' + b"x" * 3000 + b'"]}',
            "headers": {"content-type": "application/json"},
        },
        413,
        "the body is",
        None,
    ),
    (
        "POST",
        "/deltas",
        {
            "json": {
                "deltas": [
                    {"thread_id": "a", "messages": ["x"]},
                    {"thread_id": "b", "messages": [7]},
                ]
            }
        },
        422,
        "deltas[1].messages[0]: expected a message object",
        "deltas[1].messages[0]",
    ),
    (
        "POST",
        "/deltas",
        {"json": {"deltas": [{"thread_id": "a b", "messages": ["x"]}]}},
        422,
        "deltas[0].thread_id: thread id must be",
        "deltas[0].thread_id",
    ),
    (
        "POST",
        "/deltas",
        {"json": {"deltas": [{"messages": ["x"]}]}},
        422,
        "deltas[0].thread_id: required field is missing",
        "deltas[0].thread_id",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"min_version": "yesterday"}},
        400,
        "min_version: expected a version like",
        "min_version",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"wait": "99"}},
        400,
        "wait: expected a value from 0 to 2",
        "wait",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"wait": "soon"}},
        400,
        "wait: expected a number in ASCII digits, got 'soon'",
        "wait",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"limit": "-1"}},
        400,
        "limit: expected a value from 0",
        "limit",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"format": "xml"}},
        400,
        "format: expected 'langchain' or 'openai'",
        "format",
    ),
    (
        "GET",
        "/threads/t/state",
        {"params": {"colour": "red"}},
        400,
        "colour: unknown query parameter",
        "colour",
    ),
    ("GET", "/threads/never/state", {}, 404, "thread 'never' has never been written", "thread_id"),
    ("GET", "/threads/never/status", {}, 404, "thread 'never' has never been written", "thread_id"),
    ("DELETE", "/threads/never", {}, 404, "thread 'never' has never been written", "thread_id"),
    ("PUT", "/threads/t/state", {}, 405, "PUT is not allowed on /threads/t/state", None),
    ("GET", "/nowhere", {}, 404, "no route for GET /nowhere", None),
]


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "message", "field"),
    BAD_REQUESTS,
    ids=[f"{r[3]}-{r[4][:40]}" for r in BAD_REQUESTS],
)
def test_a_bad_request_is_answered_precisely_and_appends_nothing(
    redis_url: str,
    method: str,
    path: str,
    kwargs: dict[str, Any],
    status: int,
    message: str,
    field: str | None,
) -> None:
    settings = api_settings(
        redis_url, max_messages_per_delta=5, max_body_bytes=2048, max_wait_seconds=2
    )
    with api_client(settings) as client:
        response = client.request(method, path, **kwargs)
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert error["status"] == status
        assert message in error["message"], error["message"]
        assert error.get("field") == field
    assert _thread_keys(redis_url) == []


def _thread_keys(redis_url: str) -> list[bytes]:
    """Every key but the metrics the API process flushes on the way out."""
    client = store_for(make_settings(redis_url)).client
    return [k for k in client.scan_iter() if not k.startswith(b"{tf:metrics}")]


def _post(client: TestClient, thread: str, messages: list[Any], **kw: Any) -> dict[str, Any]:
    response = client.post(f"/threads/{thread}/deltas", json={"messages": messages}, **kw)
    assert response.status_code == 202, response.text
    body: dict[str, Any] = response.json()
    return body


def test_without_a_valid_key_every_thread_route_answers_401(redis_url: str) -> None:
    keys = json.dumps({TOKEN_A: "acme", TOKEN_B: None})
    with api_client(api_settings(redis_url, api_keys=keys)) as client:
        for headers in (
            {},
            {"authorization": "Bearer nope-nope-nope-nope"},
            {"authorization": f"Basic {TOKEN_A}"},
        ):
            response = client.post("/threads/t/deltas", json={"messages": ["x"]}, headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert client.get("/threads/t/state", headers=headers).status_code == 401
        assert client.get("/healthz").status_code == 200  # probes stay open


def test_a_tenant_never_sees_another_tenants_threads(redis_url: str) -> None:
    keys = json.dumps({TOKEN_A: "acme", TOKEN_B: "globex"})
    settings = api_settings(redis_url, api_keys=keys)
    a, b = {"authorization": f"Bearer {TOKEN_A}"}, {"authorization": f"Bearer {TOKEN_B}"}
    with api_client(settings) as client:
        _post(client, "shared-name", ["for acme"], headers=a)
        assert client.get("/threads/shared-name/status", headers=b).status_code == 404
        assert client.delete("/threads/shared-name", headers=b).status_code == 404
        _post(client, "shared-name", ["for globex"], headers=b)
    store = store_for(make_settings(redis_url))
    drainer = Drainer(store, make_settings(redis_url))
    drainer.drain("acme/shared-name")
    drainer.drain("globex/shared-name")
    with api_client(settings) as client:
        mine = client.get("/threads/shared-name/state", headers=a).json()["messages"]
        theirs = client.get("/threads/shared-name/state", headers=b).json()["messages"]
    assert [m["content"] for m in mine] == ["for acme"]
    assert [m["content"] for m in theirs] == ["for globex"]
    assert store.client.exists(store.keyspace.thread("acme/shared-name").meta)  # namespaced keys


def test_a_retried_delta_id_answers_with_the_original_version(redis_url: str) -> None:
    with api_client(api_settings(redis_url)) as client:
        first = client.post("/threads/t/deltas", json={"messages": ["x"], "delta_id": "d-1"}).json()
        again = client.post("/threads/t/deltas", json={"messages": ["x"], "delta_id": "d-1"}).json()
    assert again["version"] == first["version"] and again["duplicate"] and not first["duplicate"]
    assert again["ids"] == first["ids"]


def test_paging_and_formats_read_the_committed_state(redis_url: str) -> None:
    settings = api_settings(redis_url)
    with api_client(settings) as client:
        _post(client, "p", [{"role": "user", "content": str(i), "id": f"m{i}"} for i in range(7)])
        Drainer(store_for(settings), settings).drain("_/p")
        page = client.get("/threads/p/state", params={"limit": 3}).json()
        assert [m["id"] for m in page["messages"]] == ["m0", "m1", "m2"] and page["has_more"]
        after = client.get("/threads/p/state", params={"limit": 3, "after": "m2"}).json()
        assert [m["id"] for m in after["messages"]] == ["m3", "m4", "m5"] and after["has_more"]
        before = client.get("/threads/p/state", params={"limit": 2, "before": "m3"}).json()
        assert [m["id"] for m in before["messages"]] == ["m1", "m2"] and before["has_more"]
        last = client.get("/threads/p/state", params={"after": "m5"}).json()
        assert [m["id"] for m in last["messages"]] == ["m6"] and not last["has_more"]
        assert page["total"] == 7
        missing = client.get("/threads/p/state", params={"after": "zz"})
        assert missing.status_code == 422 and missing.json()["error"]["field"] == "after"
        openai = client.get("/threads/p/state", params={"format": "openai", "limit": 1}).json()
        assert openai["messages"] == [{"role": "user", "content": "0"}]


def test_read_your_writes_waits_for_the_version_and_says_when_it_timed_out(redis_url: str) -> None:
    settings = api_settings(redis_url, **WORKERS_ONLY)
    with api_client(settings) as client:
        version = _post(client, "w", ["first"])["version"]
        late = client.get("/threads/w/state", params={"min_version": version, "wait": "0.2"})
        assert late.status_code == 409
        error = late.json()["error"]
        assert error["code"] == "version_not_reached" and error["version"] == "0-0"
        assert f"min_version {version} was not reached within 0.2 s" in error["message"]
        Drainer(store_for(settings), settings).drain("_/w")
        ok = client.get("/threads/w/state", params={"min_version": version, "wait": "1"})
        assert ok.status_code == 200 and ok.json()["version"] == version


def test_delete_removes_the_thread_and_its_log(redis_url: str) -> None:
    settings = api_settings(redis_url)
    with api_client(settings) as client:
        _post(client, "gone", ["x"])
        assert client.delete("/threads/gone").status_code == 204
        assert client.get("/threads/gone/state").status_code == 404
    store = store_for(settings)
    assert not store.client.exists(store.keyspace.thread("_/gone").log)


def test_redis_down_is_a_503_with_retry_after(redis_server: Any) -> None:
    settings = api_settings(redis_server.url)
    with api_client(settings) as client:
        redis_server.kill()
        response = client.post("/threads/t/deltas", json={"messages": ["x"]})
        assert response.status_code == 503 and response.headers["retry-after"] == "1"
        assert client.get("/readyz").status_code == 503


def test_the_openapi_schema_describes_the_routes_and_the_message_model(redis_url: str) -> None:
    with api_client(api_settings(redis_url)) as client:
        doc = client.get("/openapi.json").json()
    assert {"/threads/{thread_id}/deltas", "/deltas", "/threads/{thread_id}/state"} <= set(
        doc["paths"]
    )
    assert {"AIMessage", "ToolMessage", "Message", "MessageLike"} <= set(
        doc["components"]["schemas"]
    )
