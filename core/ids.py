"""Ingestion ids: LangGraph's ``ensure_message_ids`` for the delta reducer.

Ids are stamped before a delta enters the log, never while reducing: the log is then
deterministic, and replaying it gives the same state, ids included. The id source is
an argument (pure logic reads no clock and no randomness of its own choosing).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Final

import msgspec

from core.convert import to_messages
from core.messages import BaseMessage

IdSource = Callable[[], str]


_VERSION_4: Final = 0x4 << 76  # the version nibble of a UUID, as an int
_RFC_4122: Final = 0x8 << 60  # the variant bits 10xx
_CLEAR: Final = ~((0xF << 76) | (0xC << 60)) & ((1 << 128) - 1)


def uuid4_str() -> str:
    """The id LangGraph stamps: ``str(uuid.uuid4())``, the same format and randomness,
    built without a ``UUID`` object (a quarter of the cost; one per id-less message)."""
    n = (secrets.randbits(128) & _CLEAR) | _VERSION_4 | _RFC_4122  # os.urandom, as uuid4
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


def ensure_ids(
    messages: Iterable[Any], new_id: IdSource = uuid4_str, path: str = "messages"
) -> list[BaseMessage]:
    """Convert every message-like and give each one without an id a new one.

    As in LangGraph: a message-like that needed conversion (dict, pair, string) counts
    an empty id as missing; a message object is stamped only when its id is None, so
    ``id=""`` on an object stays ``""``.
    """
    items = list(messages)
    converted = to_messages(items, path)
    for i, (item, message) in enumerate(zip(items, converted, strict=True)):
        missing = message.id is None if isinstance(item, BaseMessage) else not message.id
        if missing:
            converted[i] = msgspec.structs.replace(message, id=new_id())
    return converted
