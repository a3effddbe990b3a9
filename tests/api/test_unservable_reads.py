"""Through a real API process: a read never fails on a stored message.

Ingestion refuses what cannot be served, but a thread can still hold such a message:
stored before that check, by an older release, or written into Redis by hand. Here the
messages are put in the thread's log by hand (msgpack, bypassing the producer's checks)
and folded into its state by the real drain; every read of the thread used to be a 500
in the format that could not render one of them. Now each such message is served as a
marker in its place and named beside the page (``unservable``), in both formats, on
every kind of page, live and by time travel.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

from tests.workers.harness import make_settings, start_api, store_for
from tests.workers.test_concurrency import NoWake
from threadfold.core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from threadfold.workers.ingest.producer import Producer
from threadfold.workers.runtime.drain import Drainer
from threadfold.workers.settings import Settings

IDS = ["m0", "no-text", "calls", "res", "role", "key", "both", "m9"]  # the thread, in order
NOT_JSON = "has a key JSON cannot carry (None)"
CALL = {"id": "c1", "name": "mul", "args": {"a": 6}, "type": "tool_call"}
# What an older release (or a hand edit) could have stored; the id says what is wrong.
NO_TEXT = HumanMessage(content=[{"type": "text"}], id="no-text")  # no OpenAI form
CALLS = AIMessage(content=[{"type": "text", "text": 6}], tool_calls=[CALL], id="calls")
ROLE = SystemMessage(content="be brief", additional_kwargs={"__openai_role__": 5}, id="role")
KEY = HumanMessage(content="fine", response_metadata={"seen": {None: 1}}, id="key")  # JSON
BOTH = HumanMessage(content=[{"type": "image_url", "image_url": {"url": "u", None: 1}}], id="both")


def _marker_text(ident: str, fmt: str, reason: str) -> str:
    return f"[threadfold: message {ident!r} cannot be served with format={fmt}: {reason}]"


def _flaw(index: int, ident: str, fmt: str, reason: str) -> dict[str, Any]:
    what = f"cannot be served with format={fmt}: {reason}"
    return {
        "code": "unservable",
        "message": f"messages[{index}] (id {ident!r}) {what}",
        "field": f"messages[{index}]",
        "pointer": f"/messages/{index}",
        "index": index,
        "id": ident,
    }


REASONS = {
    "no-text": "content[0]: missing key 'text'",
    "calls": "content[0]: sequence item 0: expected str instance, int found",
    "role": "additional_kwargs.__openai_role__: Expected '__openai_role__' to be a str, got int",
    "both": f"content[0].image_url: {NOT_JSON}",
}
OPENAI = [
    {"role": "user", "content": "hi"},
    {"role": "user", "content": _marker_text("no-text", "openai", REASONS["no-text"])},
    {  # the marker keeps what renders: its tool call stays answered by the next message
        "role": "assistant",
        "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "mul", "arguments": '{"a": 6}'}}
        ],
        "content": _marker_text("calls", "openai", REASONS["calls"]),
    },
    {"role": "tool", "tool_call_id": "c1", "content": "42"},
    {"role": "system", "content": _marker_text("role", "openai", REASONS["role"])},
    {"role": "user", "content": "fine"},  # its metadata is not part of the OpenAI form
    {"role": "user", "content": _marker_text("both", "openai", REASONS["both"])},
    {"role": "assistant", "content": "done"},
]
OPENAI_FLAWS = [_flaw(i, m, "openai", REASONS[m]) for i, m in [(1, "no-text"), (2, "calls")]]
OPENAI_FLAWS += [_flaw(4, "role", "openai", REASONS["role"])]
OPENAI_FLAWS += [_flaw(6, "both", "openai", REASONS["both"])]
LC_REASONS = {
    "key": f"response_metadata.seen: {NOT_JSON}",
    "both": f"content[0].image_url: {NOT_JSON}",
}
LC_FLAWS = [_flaw(5, "key", "langchain", LC_REASONS["key"])]
LC_FLAWS += [_flaw(6, "both", "langchain", LC_REASONS["both"])]


def _lc_marker(ident: str, **fields: Any) -> dict[str, Any]:
    reason = LC_REASONS[ident]
    flag = {"code": "unservable", "format": "langchain", "reason": reason}
    return {
        "content": _marker_text(ident, "langchain", reason),
        "additional_kwargs": {"threadfold_unservable": flag},
        "response_metadata": {},
        "type": "human",
        "name": None,
        "id": ident,
        **fields,
    }


@dataclass(frozen=True)
class Thread:
    client: httpx.Client  # to the API process
    version: str
    drainer: Drainer


@pytest.fixture
def thread(redis_url: str, tmp_path: Path) -> Iterator[Thread]:
    """A thread whose state holds the hand-written messages between good ones."""
    settings = make_settings(redis_url)
    store = store_for(settings)
    producer = Producer(store.client, settings, NoWake())
    producer.enqueue("t", [{"role": "user", "content": "hi", "id": "m0"}])
    _by_hand(settings, [NO_TEXT, CALLS])
    producer.enqueue("t", [{"role": "tool", "content": "42", "tool_call_id": "c1", "id": "res"}])
    _by_hand(settings, [ROLE, KEY, BOTH])
    last = producer.enqueue("t", [{"role": "assistant", "content": "done", "id": "m9"}])
    drainer = Drainer(store, settings)
    drainer.drain("_/t")
    process, url = start_api(settings, tmp_path)
    client = httpx.Client(base_url=url, timeout=30)
    try:
        yield Thread(client, last.version, drainer)
    finally:
        client.close()
        process.kill()


def _by_hand(settings: Settings, messages: list[BaseMessage]) -> None:
    """Append a log entry as an older release could have: msgpack, no check at all."""
    store = store_for(settings)
    store.client.xadd(store.keyspace.thread("_/t").log, {"d": msgspec.msgpack.encode(messages)})


def _read(client: httpx.Client, **params: Any) -> dict[str, Any]:
    answer = client.get("/threads/t/state", params=params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_openai_form_serves_a_marker_for_each_message_it_cannot_render(
    thread: Thread,
) -> None:
    client, version = thread.client, thread.version
    body = _read(client, format="openai")
    assert body["version"] == version and body["total"] == 8
    assert body["messages"] == OPENAI
    assert body["unservable"] == OPENAI_FLAWS
    travelled = _read(client, format="openai", at_version=version)  # replayed from the log
    assert travelled == body


def test_the_langchain_form_serves_a_marker_for_each_message_json_cannot_carry(
    thread: Thread,
) -> None:
    client, version = thread.client, thread.version
    first = _read(client)  # the bodies' JSON cache misses
    assert first == _read(client)  # and then hits: markers are never cached
    messages = first["messages"]
    assert [m["id"] for m in messages] == IDS
    assert messages[1]["content"] == [{"type": "text"}]  # LangChain's form serves it
    assert messages[5] == _lc_marker("key")
    assert messages[6] == _lc_marker("both")
    assert first["unservable"] == LC_FLAWS
    travelled = _read(client, at_version=version)  # rendered without the cache
    assert travelled == first


def test_a_page_names_its_markers_where_they_stand_in_it(
    thread: Thread,
) -> None:
    client = thread.client
    page = _read(client, format="openai", after="m0", limit=2)
    assert page["has_more"] and page["messages"] == OPENAI[1:3]
    assert page["unservable"] == [
        _flaw(0, "no-text", "openai", REASONS["no-text"]),
        _flaw(1, "calls", "openai", REASONS["calls"]),
    ]
    page = _read(client, before="m9", limit=2)
    assert [m["id"] for m in page["messages"]] == ["key", "both"]
    assert page["unservable"] == [
        _flaw(0, "key", "langchain", LC_REASONS["key"]),
        _flaw(1, "both", "langchain", LC_REASONS["both"]),
    ]
    clean = _read(client, format="openai", before="no-text")
    assert clean["messages"] == OPENAI[:1]
    assert "unservable" not in clean  # a page without markers is as it always was


def test_the_thread_stays_writable_and_a_replaced_message_is_served_again(
    thread: Thread,
) -> None:
    """A client repairs the thread by id: the marker names the message to replace."""
    client = thread.client
    fixed = client.post(
        "/threads/t/deltas",
        json={"messages": [{"role": "user", "content": "fixed", "id": "no-text"}]},
    )
    assert fixed.status_code == 202, fixed.text
    thread.drainer.drain("_/t")
    body = _read(client, format="openai", min_version=fixed.json()["version"])
    assert body["messages"][1] == {"role": "user", "content": "fixed"}
    assert [f["id"] for f in body["unservable"]] == ["calls", "role", "both"]
