"""msgpack for the log and state, JSON for the wire: exact round trips."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from threadfold.core import InvalidMessage, dump_messages, to_messages
from threadfold.core.codec import (
    decode_message,
    decode_messages,
    decode_stored,
    encode_message,
    encode_messages,
    encode_stored,
    from_json,
    to_json,
)

SAMPLES: list[Any] = [
    {"role": "user", "content": "hi", "id": "1", "name": "bob"},
    {
        "role": "assistant",
        "content": "",
        "id": "2",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"a": [1, 2.5, null]}'},
            }
        ],
    },
    {"type": "ai", "content": [{"type": "text", "text": "t"}], "id": "3", "example": True},
    {
        "role": "tool",
        "content": "ok",
        "tool_call_id": "c1",
        "artifact": {"x": [1, 2]},
        "status": "error",
        "id": "4",
    },
    {
        "type": "AIMessageChunk",
        "content": "par",
        "id": "5",
        "tool_call_chunks": [{"name": "f", "args": '{"a":', "id": "c", "index": 0}],
        "usage_metadata": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    },
    {"type": "remove", "id": "6", "content": ""},
    {"role": "developer", "content": "be terse", "id": "7"},
    {
        "type": "ai",
        "content": "x",
        "id": "8",
        "response_metadata": {"model_name": "m"},
        "custom": {"nested": [1, "2"]},
    },
]


@pytest.mark.parametrize("sample", SAMPLES)
def test_msgpack_round_trip_is_exact(sample: Any) -> None:
    [message] = to_messages([sample])
    assert decode_message(encode_message(message)) == message
    assert dump_messages(decode_messages(encode_messages([message, message]))) == dump_messages(
        [message, message]
    )


def test_json_wire_form_is_langchains_flat_dump() -> None:
    messages = to_messages(SAMPLES)
    assert from_json(to_json(messages)) == dump_messages(messages)


def test_values_that_are_not_json_data_are_refused_at_encoding() -> None:
    [message] = to_messages(
        [{"role": "tool", "content": "x", "tool_call_id": "c", "artifact": object()}]
    )
    with pytest.raises(InvalidMessage, match="not JSON data"):
        encode_message(message)
    [lone] = to_messages([{"role": "user", "content": "a\udcff"}])  # UTF-8 cannot carry it
    with pytest.raises(InvalidMessage, match="not JSON data"):
        encode_message(lone)


def test_stored_messages_carry_no_field_names() -> None:
    """Tagged arrays: the payload is about the size of the values alone."""
    [message] = to_messages([{"role": "user", "content": "hello", "id": "abc"}])
    assert b"content" not in encode_message(message)
    assert len(encode_message(message)) < 40


@pytest.mark.parametrize("sample", SAMPLES)
def test_state_bodies_are_stored_without_their_id_and_read_back_whole(sample: Any) -> None:
    [message] = to_messages([sample])
    ident = "b7a1d2c0-6f1e-4c2a-9d3b-0c5e8a7f6e21"
    message = msgspec.structs.replace(message, id=ident)
    body = encode_stored(message)
    assert ident.encode() not in body
    assert len(body) < len(encode_message(message))
    assert decode_stored(body, ident) == message
    # a body stored with its id (as before) reads the same
    assert decode_stored(encode_message(message), ident) == message
    # the id is the field's, whatever the body says
    assert decode_stored(body, "other").id == "other"
