"""A read's rendering never fails on a stored message (threadfold.core.render).

Stored messages here are what ingestion would refuse as well as what it accepts: every
input form with good and broken content blocks, values JSON cannot carry (a ``None``
or tuple key, from a Python caller), message objects built by hand; stored as the drain
stores them (msgpack, no check) and decoded as a read decodes them. Each is served as
rendering it alone serves it, or as a marker in its place that the page names.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AnyMessage
from pydantic import TypeAdapter

from tests.core.test_servable import hand_built, message_likes
from threadfold.core import InvalidMessage, to_message
from threadfold.core.codec import decode_stored
from threadfold.core.dump import dump_messages
from threadfold.core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from threadfold.core.openai import to_openai
from threadfold.core.render import FLAG, render

FORMATS = ("langchain", "openai")
OPENAI_KEYS = {"role", "name", "tool_calls", "refusal", "tool_call_id", "content"}
LANGCHAIN = TypeAdapter(AnyMessage)
MARKED = object()  # stands for a marker in the expected page


def _stored(items: list[Any]) -> tuple[list[BaseMessage], set[str | None]]:
    """The message-likes LangChain accepts, as a read decodes them once stored; and the
    ids of those that were message objects built by hand."""
    out: list[BaseMessage] = []
    built: set[str | None] = set()
    for item in items:
        try:
            message = to_message(item)
            body = msgspec.msgpack.encode(msgspec.structs.replace(message, id=None))
        except (InvalidMessage, OverflowError):  # refused, or an int msgpack cannot carry
            continue
        out.append(decode_stored(body, f"m{len(out)}"))
        if isinstance(item, BaseMessage):
            built.add(out[-1].id)
    return out, built


def _alone(message: BaseMessage, fmt: str) -> list[dict[str, Any]] | None:
    """``message`` rendered on its own as reads rendered it, or None where that failed
    (the converter raised, or the reply could not be written as JSON)."""
    try:
        out = to_openai([message]) if fmt == "openai" else dump_messages([message])
        msgspec.json.encode(out)
    except Exception:  # whatever failed a read
        return None
    return out


def _check_marker(marker: dict[str, Any], message: BaseMessage, fmt: str, built: bool) -> None:
    assert isinstance(marker["content"], str)
    assert marker["content"].startswith(f"[threadfold: message {message.id!r} cannot be served")
    if fmt == "openai":  # an OpenAI message, with no key OpenAI would refuse
        assert set(marker) <= OPENAI_KEYS and isinstance(marker["role"], str)
    else:  # LangChain loads it, flagged
        assert marker["id"] == message.id and marker["type"] == message.type
        assert marker["additional_kwargs"][FLAG]["format"] == "langchain"
        if not built:  # (a tool call built by hand without an id LangChain never loads)
            LANGCHAIN.validate_python(marker)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(message_likes, hand_built), max_size=6), st.sampled_from(FORMATS))
def test_a_page_serves_each_message_as_rendered_alone_or_as_a_named_marker(
    items: list[Any], fmt: str
) -> None:
    stored, built = _stored(items)
    rendered = render(stored, fmt)
    msgspec.json.encode(rendered.messages)  # the reply can always be written
    expected: list[Any] = []
    flaws: list[tuple[int, str | None]] = []
    for message in stored:
        alone = _alone(message, fmt)
        if alone is None:
            flaws.append((len(expected), message.id))
            expected.append(MARKED)
        else:
            expected.extend(alone)
    assert [(f.index, f.id) for f in rendered.unservable] == flaws
    got: list[Any] = list(rendered.messages)
    marked = {f.index: f for f in rendered.unservable}
    for message in stored:
        flaw = next((f for f in rendered.unservable if f.id == message.id), None)
        if flaw is not None:
            _check_marker(got[flaw.index], message, fmt, message.id in built)
    got = [MARKED if i in marked else m for i, m in enumerate(got)]
    assert got == expected
    if not flaws:  # a page that renders is served as it always was
        whole = to_openai(stored) if fmt == "openai" else dump_messages(stored)
        assert rendered.messages == whole


def test_a_marker_keeps_what_renders_and_names_the_place() -> None:
    call = {"id": "c1", "name": "f", "args": {"q": "é"}, "type": "tool_call"}
    broken = AIMessage(content=[{"type": "image"}], tool_calls=[call], name="bot", id="a")
    rendered = render([HumanMessage(content="hi", id="h"), broken], "openai")
    [flaw] = rendered.unservable
    assert (flaw.index, flaw.id, flaw.field, flaw.pointer) == (1, "a", "messages[1]", "/messages/1")
    reason = (
        "content[0]: Unrecognized content block at messages[1].content[0] has 'type': 'image' "
        "but does not have a 'source' or 'image' key. Full content block:\n\n{'type': 'image'}"
    )
    assert flaw.reason == reason
    assert flaw.message == f"messages[1] (id 'a') cannot be served with format=openai: {reason}"
    assert rendered.messages[1] == {
        "role": "assistant",
        "name": "bot",
        "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "f", "arguments": '{"q": "é"}'}}
        ],
        "content": f"[threadfold: message 'a' cannot be served with format=openai: {reason}]",
    }


def test_a_marker_whose_head_fails_keeps_only_what_cannot() -> None:
    """A role override that is not a string, a tool call without an id (built by hand):
    the marker has its class's role and the calls that render."""
    role = SystemMessage(content="s", additional_kwargs={"__openai_role__": 1}, id="s")
    good = {"id": "c1", "name": "f", "args": {}, "type": "tool_call"}
    calls = AIMessage(content="", tool_calls=[{"name": "f", "args": {}}, good], id="a")
    rendered = render([role, calls], "openai")
    assert [f.reason for f in rendered.unservable] == [
        "additional_kwargs.__openai_role__: Expected '__openai_role__' to be a str, got int",
        "KeyError: 'id'",
    ]
    assert [m["role"] for m in rendered.messages] == ["system", "assistant"]
    assert rendered.messages[1]["tool_calls"] == [
        {"type": "function", "id": "c1", "function": {"name": "f", "arguments": "{}"}}
    ]


@pytest.mark.parametrize(("key", "shown"), [(None, "None"), (True, "True"), (("a", 1), "('a', 1)")])
def test_a_key_json_cannot_carry_is_named_where_it_is_and_its_field_reset(
    key: Any, shown: str
) -> None:
    message = AIMessage(
        content="kept? no: a marker says why",
        response_metadata={"deep": [{"ok": 1}, {key: 1}]},
        usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        id="a",
    )
    stored = decode_stored(msgspec.msgpack.encode(msgspec.structs.replace(message, id=None)), "a")
    rendered = render([stored], "langchain")
    reason = f"response_metadata.deep[1]: has a key JSON cannot carry ({shown})"
    assert [f.reason for f in rendered.unservable] == [reason]
    [marker] = rendered.messages
    assert marker["response_metadata"] == {}  # its default
    assert marker["usage_metadata"] == message.usage_metadata  # JSON carries the rest
    assert marker["additional_kwargs"] == {
        FLAG: {"code": "unservable", "format": "langchain", "reason": reason}
    }
    assert render([stored], "openai").unservable == []  # the OpenAI form does not carry it
