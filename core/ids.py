"""Ingestion ids: LangGraph's ``ensure_message_ids`` for the delta reducer.

Ids are stamped before a delta enters the log, never while reducing: the log is then
deterministic, and replaying it gives the same state, ids included. The id source is
an argument (pure logic reads no clock and no randomness of its own choosing).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import msgspec

from threadfold.core.convert import to_messages
from threadfold.core.messages import BaseMessage

IdSource = Callable[[], str]


_VERSION_4: Final = 0x4 << 76  # the version nibble of a UUID, as an int
_RFC_4122: Final = 0x8 << 60  # the variant bits 10xx
_CLEAR: Final = ~((0xF << 76) | (0xC << 60)) & ((1 << 128) - 1)
_STDLIB_UUID4: Final = uuid.uuid4


def uuid4_str() -> str:
    """The id LangGraph stamps: ``str(uuid.uuid4())``, drawn from ``uuid.uuid4``.

    ``uuid.uuid4`` is looked up on every call, so code that patches it for reproducible
    ids (as LangGraph's own tests do) gets them here too. Unpatched, 128 bits from the
    same source (the OS's random bytes) are formatted as uuid4 formats them, without
    building a ``UUID`` object: ~0.8 us less per id-less message on the ingest path.
    """
    uuid4 = uuid.uuid4
    if uuid4 is not _STDLIB_UUID4:
        return str(uuid4())
    return uuid4_format(secrets.randbits(128))


def uuid4_format(bits: int) -> str:
    """``str(uuid.UUID(int=bits, version=4))``: version and variant set, then formatted."""
    n = (bits & _CLEAR) | _VERSION_4 | _RFC_4122
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


#: Namespace of the ids derived from a producer's delta_id (uuid5).
DELTA_NAMESPACE = uuid.UUID("6f1c1a52-5d0e-4a8e-9a53-1c0ffee7f01d")


def derived_ids(ref: str, delta_id: str) -> IdSource:
    """Ids for a delta that has a ``delta_id``: the same on every retry of it.

    A retry after a lost reply must stamp its id-less messages with the ids the first
    attempt stored, or the caller could never address them; a uuid5 of the thread, the
    delta_id and the message's rank among the stamped ones gives exactly that.
    """
    counter = iter(range(1 << 62))
    return lambda: str(uuid.uuid5(DELTA_NAMESPACE, f"{ref}\x00{delta_id}\x00{next(counter)}"))


def is_message_object(item: Any) -> bool:
    """Whether conversion took ``item`` as a message object (ours or LangChain's)
    rather than building a new message from a dict, a string or a pair.

    Only such an object can be "the same message" twice: LangGraph stamps its id in
    place, so a second occurrence already carries the first one's id, while every
    occurrence of a dict, string or pair is converted to a message of its own.
    """
    return isinstance(item, BaseMessage) or not isinstance(item, dict | str | Sequence)


def ensure_ids(
    messages: Iterable[Any], new_id: IdSource = uuid4_str, path: str = "messages"
) -> list[BaseMessage]:
    """Convert every message-like and give each one without an id a new one.

    As in LangGraph: a message-like that needed conversion (dict, pair, string) counts
    an empty id as missing; a message object is stamped only when its id is None, so
    ``id=""`` on an object stays ``""``, and one object passed twice gets one id.
    """
    items = list(messages)
    converted = to_messages(items, path)
    given: dict[int, str] = {}  # id(object) -> its id; `items` keeps the objects alive
    for i, message in enumerate(converted):
        item = items[i]
        if type(item) is not dict and is_message_object(item):
            if message.id is None:
                ident = given.get(id(item))
                if ident is None:
                    ident = given[id(item)] = new_id()
                converted[i] = msgspec.structs.replace(message, id=ident)
        elif not message.id:
            converted[i] = msgspec.structs.replace(message, id=new_id())
    return converted


#: The longest ``delta_id`` the service takes (an append's or a copy's retry identity).
MAX_DELTA_ID: Final = 200
