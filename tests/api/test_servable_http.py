"""Through a real API process: what the API accepts it can serve, in both formats.

The reported case: ``{"type": "text"}`` without ``text`` was accepted (202), and every
``GET …/state?format=openai`` of the thread was a 500 from then on. Now it is refused
with a 422 naming the block, and the thread stays readable in both formats — including
after two chunks, each servable, merge (``THREADFOLD_MERGE_CHUNKS``) into a sum that
would not be.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.workers.harness import make_settings, start_api, store_for
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

REPORTED = {"messages": [{"type": "human", "content": [{"type": "text"}], "id": "m1"}]}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBOR"}


@pytest.fixture
def api(redis_url: str, tmp_path: Path) -> Iterator[tuple[httpx.Client, Settings]]:
    settings = make_settings(redis_url, merge_chunks=True)
    process, url = start_api(settings, tmp_path)
    client = httpx.Client(base_url=url, timeout=30)
    try:
        yield client, settings
    finally:
        client.close()
        process.kill()


def _post(client: httpx.Client, body: object) -> httpx.Response:
    return client.post("/threads/t/deltas", json=body)


def test_the_reported_message_is_a_422_and_the_thread_reads_in_both_formats(
    api: tuple[httpx.Client, Settings],
) -> None:
    client, settings = api
    assert _post(client, {"messages": [{"role": "user", "content": "hi", "id": "m0"}]}).is_success
    refused = _post(client, REPORTED)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == {
        "status": 422,
        "code": "invalid",
        "message": "messages[0].content[0]: cannot be served with format=openai: "
        "missing key 'text'",
        "field": "messages[0].content[0]",
        "pointer": "/messages/0/content/0",
    }
    # two chunks of one id: each servable, their merged sum would not be
    image = {
        "type": "AIMessageChunk",
        "id": "x",
        "content": [{"index": 0, "type": "image", "source": PNG}],
    }
    text = {
        "type": "AIMessageChunk",
        "id": "x",
        "content": [{"index": 0, "type": "text", "text": "ok"}],
    }
    assert _post(client, {"messages": [image]}).status_code == 202
    assert _post(client, {"messages": [text]}).status_code == 202
    Drainer(store_for(settings), settings).drain("_/t")

    openai = client.get("/threads/t/state", params={"format": "openai"})
    assert openai.status_code == 200, openai.text
    assert openai.json()["messages"] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ok"},  # the new chunk replaced the old
    ]
    langchain = client.get("/threads/t/state")
    assert langchain.status_code == 200, langchain.text
    assert [m["id"] for m in langchain.json()["messages"]] == ["m0", "x"]
