"""A copy's retry identity (its ``delta_id``) is its own, apart from the appends'
delta_ids: a copy onto an existing thread is 409 on ``to`` whatever delta_ids the
thread's appends (or another source's copy) used, and only the retry of the copy that
made the thread (same source, same delta_id) is answered with the copy made. It
answered 201 "copied" onto a thread whose dedupe record held the copy's delta_id,
though nothing was copied."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings


def _append(client: TestClient, thread: str, text: str, **body: Any) -> dict[str, Any]:
    response = client.post(
        f"/threads/{thread}/deltas", json={"messages": [["user", text]], **body}
    )
    assert response.status_code == 202, response.text
    found: dict[str, Any] = response.json()
    return found


def _copy(client: TestClient, source: str, to: str, delta_id: str) -> Any:
    return client.post(f"/threads/{source}/copy", json={"to": to, "delta_id": delta_id})


def _conflict(response: Any) -> None:
    assert response.status_code == 409, response.text
    assert response.json()["error"]["field"] == "to"


def _messages(client: TestClient, thread: str) -> list[str]:
    state = client.get(f"/threads/{thread}/state").json()
    return [m["content"] for m in state["messages"]]


def test_a_copy_onto_a_thread_whose_append_used_its_delta_id_is_409(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="ci")) as client:
        _append(client, "src", "source")
        _append(client, "taken", "mine", delta_id="d1")
        _conflict(_copy(client, "src", "taken", "d1"))
        assert _messages(client, "taken") == ["mine"]


def test_a_copy_from_another_source_with_the_same_delta_id_is_409(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="ci")) as client:
        _append(client, "one", "first source")
        _append(client, "two", "second source")
        made = _copy(client, "one", "c", "k")
        assert made.status_code == 201, made.text
        _conflict(_copy(client, "two", "c", "k"))
        _conflict(_copy(client, "one", "c", "other"))
        _conflict(client.post("/threads/one/copy", json={"to": "c"}))
        assert _messages(client, "c") == ["first source"]


def test_a_retried_copy_is_answered_with_the_copy_it_made(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="ci")) as client:
        _append(client, "src", "source")
        made = _copy(client, "src", "c", "r")
        assert made.status_code == 201, made.text
        _append(client, "c", "later")  # the copy has moved on: its retry is still it
        again = _copy(client, "src", "c", "r")
        assert again.status_code == 201, again.text
        assert again.json() == made.json()
        assert _messages(client, "c") == ["source", "later"]


def test_an_append_with_a_copys_delta_id_is_an_append(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="ci")) as client:
        _append(client, "src", "source")
        made = _copy(client, "src", "c", "k")
        assert made.status_code == 201, made.text
        appended = _append(client, "c", "mine", delta_id="k")
        assert not appended["duplicate"] and appended["version"] != made.json()["version"]
        assert _messages(client, "c") == ["source", "mine"]


@pytest.mark.parametrize("delta_id", ["", "x" * 201, 5])
def test_a_copys_delta_id_is_checked_as_an_appends(redis_url: str, delta_id: object) -> None:
    with api_client(api_settings(redis_url, key_prefix="ci")) as client:
        _append(client, "src", "source")
        refused = client.post("/threads/src/copy", json={"to": "c", "delta_id": delta_id})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["field"] == "delta_id"
        assert client.get("/threads/c/status").status_code == 404
