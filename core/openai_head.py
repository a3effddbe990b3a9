"""Every key of an OpenAI message dict but ``content``, in LangChain's order.

``role``, ``name``, the message's own ``tool_calls``, ``refusal``, ``tool_call_id`` and
``id`` depend on the message alone, never on its content blocks, so they are built here
and :mod:`threadfold.core.openai` adds ``content`` (and any tool calls its blocks declare) after.
"""

from __future__ import annotations

import json
from typing import Any, Final

import msgspec

from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

__all__ = ["check_head", "function_call", "message_head"]

# LangChain's module for the one message class it cannot convert, for its error text.
_LC_MODULE: Final[dict[type[BaseMessage], str]] = {
    RemoveMessage: "langchain_core.messages.modifier"
}


def _role(message: BaseMessage, path: str) -> str:
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        role = message.additional_kwargs.get("__openai_role__", "system")
        if not isinstance(role, str):
            reason = f"Expected '__openai_role__' to be a str, got {type(role).__name__}"
            raise InvalidMessage(f"{path}.additional_kwargs.__openai_role__", reason, "TypeError")
        return role
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return message.role
    cls = type(message)
    module = _LC_MODULE.get(cls, cls.__module__)
    raise InvalidMessage(path, f"Unknown BaseMessage type <class '{module}.{cls.__name__}'>.")


def function_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    return {"type": "function", "id": call_id, "function": {"name": name, "arguments": arguments}}


# ensure_ascii=False: OpenAI takes UTF-8, and LangChain sends non-ASCII unescaped. One
# encoder for every call: json.dumps with any non-default option builds a new one each
# time (0.9 of its 2.2 us for a typical call's arguments); the output is the same.
_ARGUMENTS: Final = json.JSONEncoder(ensure_ascii=False)


def _arguments(args: Any, path: str) -> str:
    try:
        return _ARGUMENTS.encode(args)
    except (TypeError, ValueError) as exc:
        raise InvalidMessage(path, str(exc), type(exc).__name__) from exc


def check_head(message: BaseMessage, path: str) -> None:
    """Raise what :func:`message_head` raises for ``message``, without building the
    dict: its role, and each tool call's keys and arguments (the ingest check, which
    runs on every AI message with tool calls)."""
    _role(message, path)
    if isinstance(message, AIMessage):
        for k, c in enumerate(message.tool_calls):
            c["id"], c["name"]  # a message object built by hand may lack them
            if not _plain_json(c["args"]):
                _arguments(c["args"], f"{path}.tool_calls[{k}]")


_JSON_ENCODER: Final = msgspec.json.Encoder()
_JSON_DECODER: Final = msgspec.json.Decoder()


def _plain_json(value: Any) -> bool:
    """True when ``value`` is plain JSON data, which ``json.dumps`` never refuses: it
    comes back equal from a JSON round trip (0.3 us where json.dumps takes 1.5). False
    decides nothing: bytes, NaN or an int key come back different, and json.dumps
    refuses only the first."""
    try:
        return bool(_JSON_DECODER.decode(_JSON_ENCODER.encode(value)) == value)
    except Exception:  # noqa: BLE001  # anything msgspec cannot take is left to json.dumps
        return False


def message_head(message: BaseMessage, include_id: bool, path: str) -> dict[str, Any]:
    """Every key but ``content``, in LangChain's order."""
    head: dict[str, Any] = {"role": _role(message, path)}
    if message.name:
        head["name"] = message.name
    if isinstance(message, AIMessage) and message.tool_calls:
        head["tool_calls"] = [
            function_call(c["id"], c["name"], _arguments(c["args"], f"{path}.tool_calls[{k}]"))
            for k, c in enumerate(message.tool_calls)
        ]
    if refusal := message.additional_kwargs.get("refusal"):
        head["refusal"] = refusal
    if isinstance(message, ToolMessage):
        head["tool_call_id"] = message.tool_call_id
    if include_id and message.id:
        head["id"] = message.id
    return head
