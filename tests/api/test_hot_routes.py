"""The hot routes answered without Starlette's middleware (threadfold.api.hot) answer
exactly as through it: the same status, headers and body for every request, the
refusals included; requests they do not match go through Starlette as before."""

from __future__ import annotations

import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from threadfold.api.hot import HotApp

MESSAGE = {"messages": [{"type": "human", "content": "hi", "id": "m1"}], "delta_id": "d1"}
JSON = {"content-type": "application/json"}

# (method, path, body, headers): what each request asks; each is sent twice, once
# through each path, on a thread of its own so the second sees what the first saw.
REQUESTS: list[tuple[str, str, bytes | None, dict[str, str]]] = [
    ("POST", "/threads/{t}/deltas", b'{"messages": [["user", "x"]], "delta_id": "a"}', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": [["user", "x"]], "delta_id": "a"}', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": [{"type": "tool"}]}', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": [', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": []}', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": [["user", "x"]]}', {"content-type": "text"}),
    ("POST", "/threads/{t}/deltas?delta_id=x", b'{"messages": [["user", "x"]]}', JSON),
    ("POST", "/threads/{t}/deltas", b'{"messages": [["user", "x"]], "extra": 1}', JSON),
    ("POST", "/threads/{t}%20x/deltas", b'{"messages": [["user", "x"]]}', JSON),
    ("PUT", "/threads/{t}/deltas", b"{}", JSON),
    ("GET", "/threads/{t}/deltas", None, {}),
    ("POST", "/threads/{t}/deltas/", b'{"messages": [["user", "x"]]}', JSON),
    ("GET", "/threads/{t}/state", None, {}),
    ("GET", "/threads/{t}/state?format=openai", None, {}),
    ("GET", "/threads/{t}/state?limit=1&after=m1", None, {}),
    ("GET", "/threads/{t}/state?min_version=99999999999999-0&wait=0", None, {}),
    ("GET", "/threads/{t}/state?bogus=1", None, {}),
    ("GET", "/threads/never-{t}/state", None, {}),
    ("HEAD", "/threads/{t}/state", None, {}),
    ("POST", "/threads/{t}/state", b"{}", JSON),
    ("GET", "/threads/{t}/status", None, {}),
    ("GET", "/healthz", None, {}),
    ("GET", "/nothing/{t}", None, {}),
]

# Headers that differ between two answers by nature, not by path.
_VARYING = {"date"}


def _answer(client: TestClient, method: str, path: str, body: bytes | None,
            headers: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
    response = client.request(method, path, content=body, headers=headers)
    kept = [(k, v) for k, v in response.headers.items() if k not in _VARYING]
    return response.status_code, kept, response.content


def _version_free(answer: tuple[int, list[tuple[str, str]], bytes], thread: str) -> Any:
    """An answer with the thread's name, versions and derived ids taken out (each side
    writes its own thread, so those differ by construction)."""
    status, headers, content = answer
    text = content.decode().replace(thread, "T")
    text = re.sub(r"\b\d{10,}(-\d+)?\b", "V", text)  # versions, times
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "U", text)
    sized = [(k, v) for k, v in headers if k != "content-length"]
    return status, sized, text


def test_the_hot_routes_answer_as_through_starlette(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="hot")) as client:
        app = client.app
        assert isinstance(app, HotApp) and any(hot for _, hot in app._hot)
        hot = app._hot
        for side in ("direct", "starlette"):
            app._hot = hot if side == "direct" else ()
            thread = f"{side}-t"
            created = client.post(f"/threads/{thread}/deltas", json=MESSAGE, headers=JSON)
            assert created.status_code == 202
        app._hot = hot
        for method, path, body, headers in REQUESTS:
            answers = []
            for side in ("direct", "starlette"):
                app._hot = hot if side == "direct" else ()
                thread = f"{side}-t"
                answer = _answer(client, method, path.format(t=thread), body, headers)
                answers.append(_version_free(answer, thread))
            app._hot = hot
            assert answers[0] == answers[1], (method, path)


@pytest.mark.parametrize("name", ["post_delta", "get_state"])
def test_the_hot_routes_are_the_ones_named(redis_url: str, name: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="hotn")) as client:
        app = client.app
        assert isinstance(app, HotApp)
        assert name in {getattr(route, "name", None) for route, hot in app._hot if hot}
