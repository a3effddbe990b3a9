"""A tenant's share of writes (THREADFOLD_TENANT_RATE) is part of each operation, taken
after its checks and before anything is written: a copy (a whole state written) is
admitted as an append is, and a request refused as invalid (422, nothing written)
costs the tenant nothing (a malformed bulk of 1,000 deltas locked a tenant out for
49 s). Through the HTTP API and the two direct clients (one per form of the service)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.client import api_client, api_settings
from tests.workers.harness import make_settings
from threadfold import AsyncClient, Client
from threadfold.core.errors import InvalidInput, RateLimited

#: A bucket that does not refill within a test: what it admits is its burst.
RATE, BURST = 0.001, 4
BAD_MESSAGE = {"type": "tool", "content": "no tool_call_id"}


def _append(client: TestClient, thread: str, messages: list[Any]) -> Any:
    """POST one delta of ``messages``."""
    return client.post(f"/threads/{thread}/deltas", json={"messages": messages})


def test_copies_are_admitted_against_the_tenants_rate(redis_url: str) -> None:
    settings = api_settings(redis_url, key_prefix="ca", tenant_rate=RATE, tenant_burst=BURST)
    with api_client(settings) as client:
        assert _append(client, "src", [["user", "hi"]]).status_code == 202
        codes = [
            client.post("/threads/src/copy", json={"to": f"c{i}"}).status_code
            for i in range(BURST + 2)
        ]
        assert codes == [201] * (BURST - 1) + [429] * 3, codes
        refused = client.post("/threads/src/copy", json={"to": "late"})
        assert refused.json()["error"]["code"] == "rate_limited"
        assert int(refused.headers["retry-after"]) >= 1
        assert client.get("/threads/late/status").status_code == 404  # nothing written
        assert _append(client, "src", [["user", "more"]]).status_code == 429


def test_a_copy_refused_as_invalid_costs_nothing(redis_url: str) -> None:
    settings = api_settings(redis_url, key_prefix="ca", tenant_rate=RATE, tenant_burst=BURST)
    with api_client(settings) as client:
        assert _append(client, "src", [["user", "hi"]]).status_code == 202
        for _ in range(2 * BURST):
            assert client.post("/threads/src/copy", json={"to": "src"}).status_code == 422
            assert client.post("/threads/none/copy", json={"to": "x"}).status_code == 404
        assert client.post("/threads/src/copy", json={"to": "c"}).status_code == 201


def test_a_refused_bulk_or_append_costs_the_tenant_nothing(redis_url: str) -> None:
    settings = api_settings(redis_url, key_prefix="ca", tenant_rate=RATE, tenant_burst=BURST)
    with api_client(settings) as client:
        bulk: list[dict[str, Any]] = [
            {"thread_id": f"b{i}", "messages": [["user", "x"]]} for i in range(999)
        ]
        bulk.append({"thread_id": "b999", "messages": [BAD_MESSAGE]})
        refused = client.post("/deltas", json={"deltas": bulk})
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["field"].startswith("deltas[999].messages[0]")
        for _ in range(2 * BURST):
            assert _append(client, "t", [BAD_MESSAGE]).status_code == 422
        assert client.get("/threads/b0/status").status_code == 404
        codes = [_append(client, "t", [["user", str(i)]]).status_code for i in range(BURST + 1)]
        assert codes == [202] * BURST + [429], codes


def _sync(settings: Any) -> tuple[Callable[..., Any], Callable[[], None]]:
    client = Client(settings=settings)
    return (lambda name, *a, **k: getattr(client, name)(*a, **k)), client.close


def _async(settings: Any) -> tuple[Callable[..., Any], Callable[[], None]]:
    runner = asyncio.Runner()
    client = AsyncClient(settings=settings)

    def call(name: str, *a: Any, **k: Any) -> Any:
        return runner.run(getattr(client, name)(*a, **k))

    def close() -> None:
        runner.run(client.close())
        runner.close()

    return call, close


@pytest.mark.parametrize("opened", [_sync, _async], ids=["Client", "AsyncClient"])
def test_a_direct_client_admits_copies_and_never_charges_a_refusal(
    redis_url: str, opened: Callable[[Any], tuple[Callable[..., Any], Callable[[], None]]]
) -> None:
    call, close = opened(make_settings(redis_url, tenant_rate=RATE, tenant_burst=BURST))
    try:
        call("append", "src", [{"role": "user", "content": "hi"}])
        for _ in range(2 * BURST):
            with pytest.raises(InvalidInput):
                call("append_many", [("a", [["user", "x"]]), ("b", [BAD_MESSAGE])])
        call("copy", "src", "c0")
        call("copy", "src", "c1")
        call("copy", "src", "c2")
        with pytest.raises(RateLimited):
            call("copy", "src", "c3")
        with pytest.raises(RateLimited):
            call("append", "src", [{"role": "user", "content": "more"}])
    finally:
        close()
