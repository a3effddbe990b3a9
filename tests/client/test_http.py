"""The HTTP clients against the real API, through a real TCP proxy that watches the
connections: retries after a lost answer are applied once, gateways' 502s are retried
with backoff and 4xx never, connections are pooled, and API keys are needed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.client.conftest import Stack
from tests.client.kinds import HTTP, TOKEN, new_thread, open_client
from tests.client.proxy import Proxy
from tests.infra.ports import free_port
from threadfold import (
    ClientProtocol,
    InvalidInput,
    NotFound,
    Unauthorized,
    Unavailable,
    VersionNotReached,
)

WAIT = 20.0
FAST_RETRY: dict[str, Any] = {"backoff": 0.01, "max_backoff": 0.05}


@pytest.fixture
def proxy(stack: Stack) -> Iterator[Proxy]:
    with Proxy(stack.api_url) as running:
        yield running


@pytest.mark.parametrize("kind", HTTP)
@pytest.mark.parametrize("own_id", [False, True], ids=["id made by the client", "caller's id"])
def test_an_append_whose_answer_was_lost_is_sent_again_and_applied_once(
    kind: str, own_id: bool, stack: Stack, proxy: Proxy, runner: asyncio.Runner
) -> None:
    thread = new_thread()
    client = open_client(kind, stack.settings, proxy.url, runner, **FAST_RETRY)
    try:
        proxy.drop_responses = 1  # the API appends it; its answer never reaches the client
        done = client.append(thread, ["once"], delta_id=None if own_id else "req-7")
        assert (proxy.accepted, proxy.requests) == (2, 2)  # sent again, on a new connection
        # the API answered the retry as a duplicate; to a caller whose call it was, it is
        # one append: only a delta_id of the caller's own says what the API said
        assert done.duplicate is (not own_id)
        state = client.state(thread, min_version=done.version, wait=WAIT)
        assert [(m["content"], m["id"]) for m in state.messages] == [("once", done.ids[0])]

        proxy.drop_responses = 1  # the same for a bulk, on the pooled connection
        other = new_thread()
        results = client.append_many([(thread, ["twice"]), (other, ["first"])])
        assert (proxy.accepted, proxy.requests) == (3, 5)
        assert [r.duplicate for r in results] == [False, False]
        client.wait_for(thread, results[0].version, WAIT)
        assert [m["content"] for m in client.state(thread).messages] == ["once", "twice"]
        assert [
            m["content"]
            for m in client.state(other, min_version=results[1].version, wait=WAIT).messages
        ] == ["first"]
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_a_deletion_whose_answer_was_lost_is_done(
    kind: str, stack: Stack, proxy: Proxy, runner: asyncio.Runner
) -> None:
    thread = new_thread()
    client = open_client(kind, stack.settings, proxy.url, runner, **FAST_RETRY)
    try:
        client.wait_for(thread, client.append(thread, ["x"]).version, WAIT)
        proxy.drop_responses = 1
        client.delete(thread)  # the retry finds no thread: the first attempt deleted it
        assert proxy.requests == 4  # append, wait, and the delete twice
        with pytest.raises(NotFound):
            client.delete(thread)  # a first attempt that finds none still says so
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_a_gateways_502_is_retried_with_backoff_and_given_up_after_the_retries(
    kind: str, stack: Stack, proxy: Proxy, runner: asyncio.Runner
) -> None:
    thread = new_thread()
    client = open_client(kind, stack.settings, proxy.url, runner, retries=2, **FAST_RETRY)
    try:
        proxy.bad_gateway = 2
        done = client.append(thread, ["through"])
        assert proxy.requests == 3
        proxy.bad_gateway = 10
        with pytest.raises(Unavailable) as caught:
            client.state(thread)
        assert proxy.requests == 6  # the first attempt and two retries
        assert (caught.value.status, caught.value.code) == (502, "http_502")
        proxy.bad_gateway = 0
        state = client.state(thread, min_version=done.version, wait=WAIT)
        assert [m["content"] for m in state.messages] == ["through"]
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_a_4xx_is_never_sent_again(
    kind: str, stack: Stack, proxy: Proxy, runner: asyncio.Runner
) -> None:
    client = open_client(kind, stack.settings, proxy.url, runner, **FAST_RETRY)
    try:
        with pytest.raises(InvalidInput):
            client.append(new_thread(), [{"role": "tool", "content": "no call id"}])
        with pytest.raises(NotFound):
            client.status(new_thread())
        with pytest.raises(InvalidInput):
            client.state(new_thread(), format="xml")  # type: ignore[arg-type]
        assert proxy.requests == 3
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_a_wait_longer_than_the_api_holds_one_request_is_several(
    kind: str, stack: Stack, proxy: Proxy, runner: asyncio.Runner,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = open_client(kind, stack.settings, proxy.url, runner, **FAST_RETRY)
    try:
        thread = new_thread()
        done = client.append(thread, ["x"])
        # Past the API's longest wait (30 s): sent as one request, it was a 400.
        assert client.wait_for(thread, done.version, 3600.0) == done.version
        assert proxy.requests == 2
        module = "threadfold._async.http" if kind.startswith("Async") else "threadfold._sync.http"
        monkeypatch.setattr(f"{module}.WAIT_SLICE", 0.2)
        with pytest.raises(VersionNotReached):
            client.wait_for(thread, "99999999999999-0", 0.5)
        assert proxy.requests >= 2 + 3  # 0.2 + 0.2 + 0.1 seconds at least
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_calls_share_one_pooled_connection(
    kind: str, stack: Stack, proxy: Proxy, runner: asyncio.Runner
) -> None:
    thread = new_thread()
    client = open_client(kind, stack.settings, proxy.url, runner)
    try:
        done = client.append(thread, ["a"])
        client.append_many([(thread, ["b"])])
        client.wait_for(thread, done.version, WAIT)
        for _ in range(5):
            client.state(thread)
        client.status(thread)
        assert proxy.requests == 9
        assert proxy.accepted == 1
    finally:
        client.close()


WRONG_KEY = "not-the-key-0123456789"


@pytest.mark.parametrize("kind", HTTP)
@pytest.mark.parametrize("key", [None, WRONG_KEY], ids=["no key", "a wrong key"])
def test_without_the_api_key_every_call_is_unauthorized(
    kind: str, key: str | None, stack: Stack, runner: asyncio.Runner
) -> None:
    client = open_client(kind, stack.settings, stack.api_url, runner, api_key=key)
    calls: list[Callable[[ClientProtocol], object]] = [
        lambda c: c.append(new_thread(), ["x"]),
        lambda c: c.state(new_thread()),
        lambda c: c.status(new_thread()),
    ]
    try:
        for call in calls:
            with pytest.raises(Unauthorized) as caught:
                call(client)
            assert (caught.value.status, caught.value.code) == (401, "unauthorized")
            assert WRONG_KEY not in str(caught.value) and WRONG_KEY not in repr(caught.value)
        assert WRONG_KEY not in repr(client) and TOKEN not in repr(client)
    finally:
        client.close()


@pytest.mark.parametrize("kind", HTTP)
def test_an_unreachable_api_is_unavailable_after_the_retries(
    kind: str, stack: Stack, runner: asyncio.Runner
) -> None:
    url = f"http://user:secret@127.0.0.1:{free_port()}"  # nothing listens there
    client = open_client(kind, stack.settings, url, runner, retries=1, **FAST_RETRY)
    try:
        with pytest.raises(Unavailable) as caught:
            client.append(new_thread(), ["x"])
        error = caught.value
        assert (error.status, error.code) == (None, "unreachable")
        assert "secret" not in str(error) and "secret" not in repr(client)
    finally:
        client.close()
