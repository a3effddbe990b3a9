"""Encodings: msgpack for the log and the stored state, JSON for the wire.

Messages encode as tagged msgpack arrays (see :mod:`threadfold.core.messages`), decoded straight
back into their Structs by one typed decoder: no field names stored, no dict step.
Both directions are exact for JSON-shaped data; anything else is refused at ingestion
(:func:`encode_messages` raises :class:`InvalidMessage`), never later in a worker or a
read. msgpack alone carries more than JSON (a ``None``, ``True`` or tuple dict key),
which a read could then not answer, so an ingested delta is also encoded as JSON.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import msgspec

from threadfold.core.dump import dump_messages
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import AnyMessage, BaseMessage

_MSGPACK_ENCODER: Final = msgspec.msgpack.Encoder()
_ONE: Final = msgspec.msgpack.Decoder(AnyMessage)
_MANY: Final = msgspec.msgpack.Decoder(list[AnyMessage])
_JSON_ENCODER: Final = msgspec.json.Encoder()


def encode_message(message: BaseMessage) -> bytes:
    """One message as msgpack."""
    return _encode(message, "message")


def decode_message(data: bytes) -> BaseMessage:
    """The message :func:`encode_message` encoded."""
    result: BaseMessage = _ONE.decode(data)
    return result


def encode_stored(message: BaseMessage) -> bytes:
    """A message as a thread's state stores it: without its id, which is the hash field
    it is stored under (an id is 36 bytes of a typical 100-300-byte body)."""
    return _encode(msgspec.structs.replace(message, id=None), "message")


def decode_stored(data: bytes, ident: str) -> BaseMessage:
    """The message :func:`encode_stored` stored under ``ident`` (a body that still
    carries its id decodes the same)."""
    message: BaseMessage = _ONE.decode(data)
    return message if message.id == ident else msgspec.structs.replace(message, id=ident)


def encode_messages(messages: Sequence[BaseMessage]) -> bytes:
    """A list of messages (one delta) as msgpack; refused unless it is JSON data too.

    The JSON encoding (~0.3 us a message, in C) is the read path's own check: what it
    refuses, a read of the stored message would fail on.
    """
    listed = list(messages)
    payload = _encode(listed, "messages")
    try:
        _JSON_ENCODER.encode(listed)
    except (TypeError, msgspec.EncodeError) as exc:
        reason = f"holds a value that is not JSON data ({exc})"
        raise InvalidMessage(_locate(listed), reason) from exc
    return payload


def _locate(messages: list[BaseMessage]) -> str:
    """The field of the first message that JSON cannot encode (the rare, failing path)."""
    for i, message in enumerate(messages):
        for field in message.__struct_fields__:
            value = getattr(message, field)
            held = value.items() if field == "extra" else [(field, value)]
            for name, item in held:  # extra fields are the message's own in the dumped form
                try:
                    _JSON_ENCODER.encode(item)
                except (TypeError, msgspec.EncodeError):
                    return f"messages[{i}].{name}"
    return "messages"


def decode_messages(data: bytes) -> list[BaseMessage]:
    """The messages :func:`encode_messages` encoded."""
    result: list[BaseMessage] = list(_MANY.decode(data))
    return result


def _encode(value: Any, path: str) -> bytes:
    try:
        return _MSGPACK_ENCODER.encode(value)
    except (TypeError, OverflowError, UnicodeEncodeError, msgspec.EncodeError) as exc:
        # UnicodeEncodeError: a str with a lone surrogate, which UTF-8 cannot carry.
        raise InvalidMessage(path, f"holds a value that is not JSON data ({exc})") from exc


def to_json(value: Any) -> bytes:
    """JSON bytes of wire data; messages are written in LangChain's flat form."""
    if isinstance(value, list) and value and isinstance(value[0], BaseMessage):
        value = dump_messages(value)
    return _JSON_ENCODER.encode(value)


def from_json(data: bytes | str) -> Any:
    """Parse JSON wire data."""
    return msgspec.json.decode(data)
