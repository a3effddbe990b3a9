"""A copy is its source at one version: state and metadata together, or 404 when the
source is gone. A copy racing a DELETE of its source answered 201 with the whole state
and metadata ``{}`` (23 of 73 racing copies in one run): the state and the metadata
were two reads, the delete between them. Through a real API process with requests
racing, and through the asyncio client with the delete sent between the copy's reads
would be."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.workers.harness import make_settings, start_api
from threadfold import AsyncClient
from threadfold.core.errors import NotFound

METADATA = {"user": "u1", "run": 7}
MESSAGES = [{"role": "user", "content": "one", "id": "m1"},
            {"role": "ai", "content": "two", "id": "m2"}]


def test_copies_racing_deletes_of_their_source_are_whole_or_404(
    redis_url: str, tmp_path: Path
) -> None:
    api, url = start_api(make_settings(redis_url), tmp_path)
    try:
        with httpx.Client(base_url=url, timeout=10) as http:
            body = {"messages": MESSAGES, "metadata": METADATA}
            assert http.post("/threads/src/deltas", json=body).status_code == 202
            stop = time.monotonic() + 3
            codes: list[int] = []
            made: list[dict[str, Any]] = []

            def churn() -> None:
                with httpx.Client(base_url=url, timeout=10) as own:
                    while time.monotonic() < stop:
                        own.delete("/threads/src")
                        own.post("/threads/src/deltas", json=body)

            churner = threading.Thread(target=churn)
            churner.start()
            try:
                i = 0
                while time.monotonic() < stop:
                    i += 1
                    response = http.post("/threads/src/copy", json={"to": f"c{i}"})
                    codes.append(response.status_code)
                    if response.status_code == 201:
                        made.append(response.json())
            finally:
                churner.join()
            assert set(codes) <= {201, 404}, codes
            assert made, codes
            for copy in made:
                assert copy["messages"] == len(MESSAGES), copy
                status = http.get(f"/threads/{copy['thread_id']}/status").json()
                assert status["metadata"] == METADATA, (copy, status)
    finally:
        api.kill()


@pytest.mark.parametrize("at_current", [False, True], ids=["live", "at_version"])
def test_a_copy_whose_source_is_deleted_while_it_reads_is_whole_or_404(
    redis_url: str, at_current: bool
) -> None:
    async def run() -> None:
        client = AsyncClient(settings=make_settings(redis_url))
        try:
            for i in range(20):
                version = (await client.append("src", MESSAGES, metadata=METADATA)).version
                at = version if at_current else None
                # The copy's first read is sent, then the delete, on the same turn.
                copied, _ = await asyncio.gather(
                    client.copy("src", f"c{i}", at_version=at),
                    client.delete("src"),
                    return_exceptions=True,
                )
                if isinstance(copied, NotFound):
                    continue
                assert not isinstance(copied, BaseException), copied
                status = await client.status(f"c{i}")
                assert status.metadata == METADATA and copied.messages == len(MESSAGES)
        finally:
            await client.close()

    asyncio.run(run())
