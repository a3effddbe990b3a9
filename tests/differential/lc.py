"""Build the reference side: LangChain objects from the same JSON our side reads."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core import messages as lc

CHUNK_CLASSES = {
    "AIMessageChunk": lc.AIMessageChunk,
    "HumanMessageChunk": lc.HumanMessageChunk,
    "SystemMessageChunk": lc.SystemMessageChunk,
    "ToolMessageChunk": lc.ToolMessageChunk,
    "FunctionMessageChunk": lc.FunctionMessageChunk,
    "ChatMessageChunk": lc.ChatMessageChunk,
}


def lc_input(item: Any) -> Any:
    """The golden file's chunk convention: a chunk-typed dict stands for that object."""
    if isinstance(item, dict) and "role" not in item and item.get("type") in CHUNK_CLASSES:
        kwargs = {k: v for k, v in item.items() if k != "type"}
        return CHUNK_CLASSES[item["type"]](**kwargs)
    return item


def lc_write(write: Any) -> Any:
    if isinstance(write, list):
        return [lc_input(m) for m in write]
    return lc_input(write)


@contextmanager
def deterministic_uuid4() -> Iterator[None]:
    """LangGraph stamps ``uuid.uuid4()``; make it yield the golden placeholders."""
    counter = itertools.count(1)
    original = uuid.uuid4

    def fake() -> uuid.UUID:
        return uuid.UUID(f"00000000-0000-4000-8000-{next(counter):012d}")

    uuid.uuid4 = fake
    try:
        yield
    finally:
        uuid.uuid4 = original


LC_CLASSES: dict[str, Any] = {
    "human": lc.HumanMessage,
    "ai": lc.AIMessage,
    "system": lc.SystemMessage,
    "tool": lc.ToolMessage,
    "function": lc.FunctionMessage,
    "chat": lc.ChatMessage,
    "remove": lc.RemoveMessage,
    **CHUNK_CLASSES,
}


def lc_from_ours(dumped: dict[str, Any]) -> Any:
    """The LangChain object with exactly the fields of one of our flat dumps."""
    fields = {k: v for k, v in dumped.items() if k != "type"}
    cls = LC_CLASSES[dumped["type"]]
    if cls is lc.RemoveMessage:
        return lc.RemoveMessage(
            id=fields.pop("id"), **{k: v for k, v in fields.items() if k != "content"}
        )
    return cls(**fields)
