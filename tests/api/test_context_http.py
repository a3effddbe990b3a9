"""``GET /threads/{id}/context`` through a real API process: a window at every earlier
version equal to LangChain's ``trim_messages`` of the state at that version (where
that is valid), and every malformed query refused with a 4xx naming its parameter,
nothing else answered and no 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest
from langchain_core.messages import messages_from_dict, trim_messages

from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, store_for
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.drain import Drainer

APPROXIMATE: Final = "approximate"


class NoWake:
    def wake(self, refs: object) -> None:
        pass


@pytest.fixture(scope="module")
def api(
    redis_server_session: RedisServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    process, url = start_api(
        make_settings(redis_server_session.url), tmp_path_factory.mktemp("context")
    )
    try:
        yield url
    finally:
        process.kill()


def _turn(i: int) -> list[dict[str, Any]]:
    """A turn: a question, a tool call with its answer every third turn, a reply."""
    out: list[dict[str, Any]] = [{"role": "user", "content": f"question {i} " * 3, "id": f"h{i}"}]
    if i % 3 == 1:
        out += [
            {"role": "assistant", "content": "", "id": f"c{i}",
             "tool_calls": [{"id": f"k{i}", "type": "function",
                             "function": {"name": "look", "arguments": f'{{"n": {i}}}'}}]},
            {"role": "tool", "content": f"result {i}", "tool_call_id": f"k{i}", "id": f"t{i}"},
        ]
    out.append({"role": "assistant", "content": f"answer {i} " * (i % 4 + 1), "id": f"a{i}"})
    return out


def test_a_window_at_every_earlier_version_is_langchains_of_that_state(
    redis_url: str, api: str
) -> None:
    settings = make_settings(redis_url, retention_seconds=3600)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    drainer = Drainer(store, settings)
    versions = [producer.enqueue("w", [{"role": "system", "content": "Be brief.", "id": "s"}])]
    drainer.drain("_/w")
    for i in range(12):
        versions.append(producer.enqueue("w", _turn(i)))
        if i % 4 == 3:  # an update in place and a removal change earlier states
            versions.append(producer.enqueue("w", [
                {"role": "user", "content": "edited", "id": f"h{i - 1}"},
                {"type": "remove", "id": f"a{i - 2}", "content": ""},
            ]))
        drainer.drain("_/w")
    with httpx.Client(base_url=api, timeout=30) as client:
        for done in versions:
            state = client.get("/threads/w/state", params={"at_version": done.version}).json()
            lc = messages_from_dict([{"type": m["type"], "data": m} for m in state["messages"]])
            for budget, extra in ((40, {}), (90, {"include_system": "true"}),
                                  (120, {"include_system": "true", "start_on": "human"}),
                                  (70, {"strategy": "first", "end_on": "ai"})):
                got = client.get("/threads/w/context", params={
                    "max_tokens": budget, "at_version": done.version, **extra})
                assert got.status_code == 200, got.text
                body = got.json()
                assert body["version"] == state["version"] and body["total"] == state["total"]
                kwargs: dict[str, Any] = {
                    k: (v == "true" if k == "include_system" else v) for k, v in extra.items()
                }
                theirs = trim_messages(
                    lc, max_tokens=budget, token_counter=APPROXIMATE, **kwargs
                )
                ids = [m["id"] for m in body["messages"]]
                if body["adjusted"] is None:
                    assert ids == [m.id for m in theirs]
                else:
                    assert body["adjusted"] == "tool_pairs"
                    assert set(ids) < {m.id for m in theirs}
        # and the live window is the latest version's
        live = client.get("/threads/w/context", params={"max_tokens": 50}).json()
        last = client.get("/threads/w/context", params={
            "max_tokens": 50, "at_version": versions[-1].version}).json()
        assert live == last


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "max_tokens"),
        ({"max_tokens": ""}, "max_tokens"),
        ({"max_tokens": "0"}, "max_tokens"),
        ({"max_tokens": "-1"}, "max_tokens"),
        ({"max_tokens": "1.5"}, "max_tokens"),
        ({"max_tokens": "1e3"}, "max_tokens"),
        ({"max_tokens": "abc"}, "max_tokens"),
        ({"max_tokens": "٣"}, "max_tokens"),
        ({"max_tokens": "100000001"}, "max_tokens"),
        ({"max_tokens": "99999999999999999999999"}, "max_tokens"),
        ({"max_tokens": "10", "strategy": "middle"}, "strategy"),
        ({"max_tokens": "10", "counter": "tiktoken"}, "counter"),
        ({"max_tokens": "10", "include_system": "yes"}, "include_system"),
        ({"max_tokens": "10", "start_on": "human,"}, "start_on"),
        ({"max_tokens": "10", "start_on": "Human"}, "start_on"),
        ({"max_tokens": "10", "end_on": "remove"}, "end_on"),
        ({"max_tokens": "10", "strategy": "first", "include_system": "true"}, "include_system"),
        ({"max_tokens": "10", "strategy": "first", "start_on": "human"}, "start_on"),
        ({"max_tokens": "10", "format": "xml"}, "format"),
        ({"max_tokens": "10", "at_version": "1-2-3"}, "at_version"),
        ({"max_tokens": "10", "min_version": "x"}, "min_version"),
        ({"max_tokens": "10", "wait": "forever"}, "wait"),
        ({"max_tokens": "10", "limit": "5"}, "limit"),
    ],
)
def test_a_malformed_query_is_refused_naming_the_parameter(
    redis_url: str, api: str, params: dict[str, str], field: str
) -> None:
    settings = make_settings(redis_url)
    store = store_for(settings)
    Producer(store.client, settings, NoWake()).enqueue("q", ["hello"])
    Drainer(store, settings).drain("_/q")
    with httpx.Client(base_url=api, timeout=30) as client:
        got = client.get("/threads/q/context", params=params)
        assert 400 <= got.status_code < 500, got.text
        error = got.json()["error"]
        assert error["field"] == field, error
        assert error["message"].startswith(field)


def test_a_repeated_parameter_is_refused(redis_url: str, api: str) -> None:
    with httpx.Client(base_url=api, timeout=30) as client:
        got = client.get("/threads/q/context?max_tokens=5&max_tokens=6")
        assert got.status_code == 400 and got.json()["error"]["field"] == "max_tokens"
        missing = client.get("/threads/never/context", params={"max_tokens": 5})
        assert missing.status_code == 404
