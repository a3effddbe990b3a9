"""Every kind of client reads a thread holding messages its format cannot carry, as the
API serves it: a marker in place of each, named in ``State.unservable``; never an
exception (the direct clients raised InvalidInput for the OpenAI form, the HTTP ones a
ServerError for the API's 500, and a direct client served what the API's JSON cannot)."""

from __future__ import annotations

import msgspec

from tests.client.conftest import Stack
from tests.client.kinds import new_thread
from tests.workers.harness import store_for
from threadfold import ClientProtocol, Unservable
from threadfold.core.messages import HumanMessage

WAIT = 20.0  # seconds a read-your-writes read may wait for the worker

# As an older release, or a hand edit, could have stored them.
NO_TEXT = HumanMessage(content=[{"type": "text"}], id="no-text")  # no OpenAI form
KEY = HumanMessage(content="fine", additional_kwargs={"k": {None: 1}}, id="key")  # no JSON


def _text(ident: str, fmt: str, reason: str) -> str:
    return f"[threadfold: message {ident!r} cannot be served with format={fmt}: {reason}]"


def _flaw(index: int, ident: str, fmt: str, reason: str) -> Unservable:
    what = f"(id {ident!r}) cannot be served with format={fmt}: {reason}"
    field = f"messages[{index}]"
    return Unservable("unservable", f"{field} {what}", field, f"/messages/{index}", index, ident)


def test_a_message_the_format_cannot_carry_is_a_marker_for_every_kind(
    client: ClientProtocol, stack: Stack
) -> None:
    thread = new_thread()
    client.append(thread, [{"role": "user", "content": "hi", "id": "m0"}])
    store = store_for(stack.settings)
    log = store.keyspace.thread(f"_/{thread}").log
    store.client.xadd(log, {"d": msgspec.msgpack.encode([NO_TEXT, KEY])})  # no check at all
    last = client.append(thread, [{"role": "assistant", "content": "done", "id": "m3"}])

    openai = client.state(thread, min_version=last.version, wait=WAIT, format="openai")
    missing = "content[0]: missing key 'text'"
    assert openai.messages == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": _text("no-text", "openai", missing)},
        {"role": "user", "content": "fine"},
        {"role": "assistant", "content": "done"},
    ]
    assert openai.unservable == (_flaw(1, "no-text", "openai", missing),)

    langchain = client.state(thread, min_version=last.version, wait=WAIT)
    key = "additional_kwargs.k: has a key JSON cannot carry (None)"
    assert [m["id"] for m in langchain.messages] == ["m0", "no-text", "key", "m3"]
    assert langchain.messages[2]["content"] == _text("key", "langchain", key)
    assert langchain.messages[2]["additional_kwargs"] == {
        "threadfold_unservable": {"code": "unservable", "format": "langchain", "reason": key}
    }
    assert langchain.unservable == (_flaw(2, "key", "langchain", key),)

    page = client.state(thread, format="openai", after="m0", limit=1)
    assert page.has_more and page.unservable == (_flaw(0, "no-text", "openai", missing),)
    clean = client.state(thread, format="openai", after="no-text")
    assert clean.unservable == ()
