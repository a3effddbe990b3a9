"""Message-likes to messages: ``convert_to_messages`` of langchain-core 1.8.3.

Accepted, exactly as LangChain accepts them: our messages (kept as they are), LangChain
message objects (by their ``model_dump()``), bare strings, ``(role, content)`` pairs,
OpenAI role dicts, flat ``{"type": ...}`` dicts and ``{"lc": 1, "type": "constructor"}``
envelopes. Refused exactly where LangChain raises, with an :class:`InvalidMessage` that
names the item and field.

One documented extension: a dict without ``role`` whose ``type`` is a chunk class name
(``"AIMessageChunk"``, ...) builds that chunk from its other keys, as the constructor
would. LangChain's dict path refuses it, and JSON has no other way to carry a chunk.

Where LangChain is lossy the conversion is too, on purpose (bug-compatible): a flat AI
dict's ``usage_metadata`` and ``invalid_tool_calls`` land in ``additional_kwargs``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from core.construct import build
from core.errors import InvalidMessage
from core.messages import (
    CLASS_OF,
    AIMessage,
    BaseMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

_ENVELOPE_TYPES: Final = {
    "HumanMessage": "human",
    "HumanMessageChunk": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "SystemMessageChunk": "system",
    "FunctionMessage": "function",
    "FunctionMessageChunk": "function",
    "ToolMessage": "tool",
    "ToolMessageChunk": "tool",
    "RemoveMessage": "remove",
}
_CHUNK_TYPES: Final = frozenset(
    {
        "AIMessageChunk",
        "HumanMessageChunk",
        "SystemMessageChunk",
        "ToolMessageChunk",
        "FunctionMessageChunk",
        "ChatMessageChunk",
    }
)
_ROLES: Final = "'human', 'user', 'ai', 'assistant', 'function', 'tool', 'system', or 'developer'"


def to_messages(items: Iterable[Any], path: str = "messages") -> list[BaseMessage]:
    """Convert every item; the first bad one raises, located as ``path[i]``."""
    return [to_message(item, f"{path}[{i}]") for i, item in enumerate(items)]


def to_message(item: Any, path: str = "message") -> BaseMessage:
    """Convert one message-like (see the module doc for the forms)."""
    if isinstance(item, BaseMessage):
        return item
    if isinstance(item, str):
        return HumanMessage(content=item)
    if isinstance(item, dict):
        return _from_dict(item, path)
    if isinstance(item, list | tuple):
        if len(item) != 2:  # noqa: PLR2004
            reason = "a message given as a list must be [role, content]"
            raise InvalidMessage(path, reason, "NotImplementedError")
        return _from_role(item[0], item[1], {}, path)
    if _is_langchain_message(item):
        return _from_langchain(item, path)
    reason = f"expected a message object, a string or a [role, content] pair, got {type(item).__name__}"
    raise InvalidMessage(path, reason, "NotImplementedError")


def _from_dict(item: dict[str, Any], path: str) -> BaseMessage:
    mapped = _envelope_type(item)
    if mapped is not None:
        return _from_dict({"type": mapped, **item["kwargs"]}, path)
    if "role" not in item and item.get("type") in _CHUNK_TYPES:
        return build(CLASS_OF[item["type"]], item, path)
    kwargs = dict(item)
    role = kwargs.pop("role") if "role" in kwargs else kwargs.pop("type", _MISSING)
    content = kwargs.pop("content", _MISSING)
    if role is _MISSING or content is _MISSING:
        missing = "'role' (or 'type')" if role is _MISSING else "'content'"
        reason = f"a message object needs {missing}; got keys {sorted(map(str, item))}"
        raise InvalidMessage(path, reason, "ValueError")
    return _from_role(role, content or "", kwargs, path)


_MISSING: Final[Any] = object()


def _envelope_type(item: dict[str, Any]) -> str | None:
    """The message type of a ``{"lc": 1, "type": "constructor"}`` envelope, if it is one."""
    ident = item.get("id")
    if (
        item.get("lc") == 1
        and item.get("type") == "constructor"
        and isinstance(ident, list)
        and ident
        and isinstance(item.get("kwargs"), dict)
    ):
        last = ident[-1]
        return _ENVELOPE_TYPES.get(last) if isinstance(last, str) else None
    return None


def _from_role(role: Any, content: Any, kwargs: dict[str, Any], path: str) -> BaseMessage:
    """LangChain's ``_create_message_from_message_type``."""
    named = {k: kwargs.pop(k) for k in ("name", "tool_call_id", "id") if k in kwargs}
    named = {k: v for k, v in named.items() if v is not None}
    calls = kwargs.pop("tool_calls", None)
    if kwargs:
        metadata = kwargs.pop("response_metadata", None)
        if metadata:
            named["response_metadata"] = metadata
        named["additional_kwargs"] = _merge_nested(kwargs, path)
    if calls is not None:
        named["tool_calls"] = _openai_calls(calls, f"{path}.tool_calls")
    if not isinstance(role, str):
        _check_hashable(role, path)
    return _by_role(str(role) if isinstance(role, str) else role, content, named, path)


def _merge_nested(extras: dict[str, Any], path: str) -> dict[str, Any]:
    """Leftover keys go to additional_kwargs; a nested ``additional_kwargs`` wins."""
    nested = extras.pop("additional_kwargs", {})
    try:
        extras.update(nested)
    except (TypeError, ValueError) as exc:
        reason = f"expected an object, got {type(nested).__name__}"
        raise InvalidMessage(f"{path}.additional_kwargs", reason, type(exc).__name__) from exc
    return extras


def _check_hashable(role: Any, path: str) -> None:
    try:
        hash(role)
    except TypeError as exc:
        reason = f"expected a role string, got {type(role).__name__}"
        raise InvalidMessage(f"{path}.role", reason, "TypeError") from exc


def _by_role(role: Any, content: Any, kwargs: dict[str, Any], path: str) -> BaseMessage:
    extras = kwargs.get("additional_kwargs", {})
    if role in ("human", "user", "ai", "assistant"):
        example = extras.pop("example", False)
        if example:
            kwargs["example"] = example
        cls: type[BaseMessage] = HumanMessage if role in ("human", "user") else AIMessage
        return build(cls, {"content": content, **kwargs}, path)
    if role in ("system", "developer"):
        if role == "developer":
            kwargs["additional_kwargs"] = kwargs.get("additional_kwargs") or {}
            kwargs["additional_kwargs"]["__openai_role__"] = "developer"
        return build(SystemMessage, {"content": content, **kwargs}, path)
    if role == "function":
        return build(FunctionMessage, {"content": content, **kwargs}, path)
    if role == "tool":
        artifact = extras.pop("artifact", None)
        status = extras.pop("status", None)
        if status is not None:
            kwargs["status"] = status
        return build(ToolMessage, {"content": content, "artifact": artifact, **kwargs}, path)
    if role == "remove":
        return build(RemoveMessage, kwargs, path)
    reason = f"unknown message type {role!r}; use one of {_ROLES}"
    raise InvalidMessage(f"{path}.type", reason, "ValueError")


def _openai_calls(calls: Any, path: str) -> list[Any]:
    """OpenAI-shaped tool calls become LangChain ones; others pass to validation."""
    if not isinstance(calls, list | tuple):
        raise InvalidMessage(path, "expected a list of tool calls", "TypeError")
    result: list[Any] = []
    for i, call in enumerate(calls):
        where = f"{path}[{i}]"
        if isinstance(call, dict) and "function" in call:
            result.append(_openai_call(call, where))
        elif isinstance(call, str | dict):
            result.append(call)
        else:
            raise InvalidMessage(where, "expected a tool call object", "TypeError")
    return result


def _openai_call(call: dict[str, Any], path: str) -> dict[str, Any]:
    """One OpenAI tool call; checked in LangChain's order so the same error wins."""
    function = call["function"]
    if not isinstance(function, dict):
        raise InvalidMessage(f"{path}.function", "expected an object", "TypeError")
    if "arguments" not in function:
        raise InvalidMessage(f"{path}.function.arguments", "required key is missing", "KeyError")
    args = function["arguments"]
    if isinstance(args, str):
        try:
            args = json.loads(args, strict=False)
        except json.JSONDecodeError as exc:
            reason = f"arguments are not valid JSON ({exc})"
            raise InvalidMessage(f"{path}.function.arguments", reason, "JSONDecodeError") from exc
    if "name" not in function:
        raise InvalidMessage(f"{path}.function.name", "required key is missing", "KeyError")
    if "id" not in call:
        raise InvalidMessage(f"{path}.id", "required key is missing", "KeyError")
    return {"name": function["name"], "args": args, "id": call["id"], "type": "tool_call"}


def _is_langchain_message(item: object) -> bool:
    return isinstance(getattr(item, "type", None), str) and callable(getattr(item, "model_dump", None))


def _from_langchain(item: Any, path: str) -> BaseMessage:
    """A LangChain message object: rebuilt losslessly from its own fields."""
    dumped: dict[str, Any] = item.model_dump()
    cls = CLASS_OF.get(dumped.get("type", ""))
    if cls is None:
        reason = f"unknown LangChain message class {type(item).__name__}"
        raise InvalidMessage(path, reason, "NotImplementedError")
    return build(cls, dumped, path)
