"""Ingestion ids: LangGraph's ``ensure_message_ids`` for the delta reducer.

Ids are stamped before a delta enters the log, never while reducing: the log is then
deterministic, and replaying it gives the same state, ids included. The id source is
an argument (pure logic reads no clock and no randomness of its own choosing).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from core.convert import to_message
from core.messages import BaseMessage

IdSource = Callable[[], str]


def uuid4_str() -> str:
    """The id LangGraph stamps: ``str(uuid.uuid4())``."""
    return str(uuid.uuid4())


def ensure_ids(
    messages: Iterable[Any], new_id: IdSource = uuid4_str, path: str = "messages"
) -> list[BaseMessage]:
    """Convert every message-like and give each one without an id a new one.

    As in LangGraph: a message-like that needed conversion (dict, pair, string) counts
    an empty id as missing; a message object is stamped only when its id is None, so
    ``id=""`` on an object stays ``""``.
    """
    result: list[BaseMessage] = []
    for i, item in enumerate(messages):
        message = to_message(item, f"{path}[{i}]")
        missing = message.id is None if isinstance(item, BaseMessage) else not message.id
        if missing:
            message = msgspec.structs.replace(message, id=new_id())
        result.append(message)
    return result
