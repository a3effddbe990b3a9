"""Message-likes to messages: ``convert_to_messages`` of langchain-core 1.8.3.

Accepted, exactly as LangChain accepts them: our messages (kept as they are), LangChain
message objects (field for field, validators not re-run), bare strings, ``(role,
content)`` pairs (any sequence, bytes included), OpenAI role dicts, flat ``{"type": ...}``
dicts and ``{"lc": 1, "type": "constructor"}`` envelopes. Refused exactly where
LangChain raises, with an :class:`InvalidMessage` that names the item and field and
carries LangChain's exception class as ``lc_error`` (Python's own ``TypeError`` for a
non-string key included, since LangChain passes the keys on as ``**kwargs``).

One documented extension: a top-level dict without ``role`` whose ``type`` is a chunk
class name (``"AIMessageChunk"``, ...) builds that chunk, as ``AIMessageChunk(**item)``
would. LangChain's dict path refuses it, and JSON has no other way to carry a chunk. An
lc envelope of a chunk class is still refused, as LangChain refuses it: the extension
is for the flat form only.

Where LangChain is lossy the conversion is too, on purpose (bug-compatible): a flat AI
dict's ``usage_metadata`` and ``invalid_tool_calls`` land in ``additional_kwargs``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Final

from threadfold.core.construct import build
from threadfold.core.errors import InvalidMessage
from threadfold.core.fastpath import fast_message
from threadfold.core.messages import (
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
    out: list[BaseMessage] = []
    append = out.append
    for i, item in enumerate(items):
        # The common shapes first, with no path string built for them.
        if type(item) is dict:
            message = fast_message(item)
            if message is not None:
                append(message)
                continue
        elif isinstance(item, BaseMessage):
            append(item)
            continue
        append(_convert(item, f"{path}[{i}]"))
    return out


def to_message(item: Any, path: str = "message") -> BaseMessage:
    """Convert one message-like (see the module doc for the forms)."""
    if type(item) is dict:
        message = fast_message(item)
        if message is not None:
            return message
    return _convert(item, path)


def _convert(item: Any, path: str) -> BaseMessage:
    """The general path: every form, every check, LangChain's errors."""
    if isinstance(item, BaseMessage):
        return item
    if isinstance(item, str):
        return HumanMessage(content=item)
    if isinstance(item, dict):
        if _is_chunk_dict(item):
            return build(CLASS_OF[item["type"]], item, path)
        return _from_dict(item, path)
    if isinstance(item, Sequence):
        return _from_pair(item, path)
    if _is_langchain_message(item):
        return _from_langchain(item, path)
    kind = type(item).__name__
    reason = f"expected a message object, a string or a [role, content] pair, got {kind}"
    raise InvalidMessage(path, reason, "NotImplementedError")


def _is_chunk_dict(item: dict[Any, Any]) -> bool:
    """Our extension: no ``role``, and a ``type`` that names a chunk class."""
    kind = item.get("type")
    return "role" not in item and isinstance(kind, str) and kind in _CHUNK_TYPES


def _from_pair(item: Sequence[Any], path: str) -> BaseMessage:
    """Any other sequence (bytes too, as in LangChain) must unpack to (role, content)."""
    parts = list(item)
    if len(parts) != 2:
        reason = f"a message given as a list must be [role, content], got {len(parts)} items"
        raise InvalidMessage(path, reason, "NotImplementedError")
    return _from_role(parts[0], parts[1], {}, path)


def load_message(item: Any, path: str = "message") -> BaseMessage:
    """A message as LangChain loads its dump (``messages_from_dict``): a dict in the
    ``model_dump()`` form (what a state read gives, what the HTTP clients send of a
    message object) built field for field as the class its ``type`` names, so an AI
    message's ``usage_metadata`` or ``invalid_tool_calls`` stay fields, where a
    message-like dict (:func:`to_message`) files them under ``additional_kwargs`` as
    LangChain's ``convert_to_messages`` does. Anything else: :func:`to_message`."""
    if isinstance(item, dict):
        cls = CLASS_OF.get(item.get("type", ""))
        if cls is not None and "role" not in item:
            return build(cls, item, path)
    return to_message(item, path)


def _from_dict(item: dict[Any, Any], path: str) -> BaseMessage:
    """A role/type dict or an lc envelope; envelopes recurse without the chunk extension."""
    mapped = _envelope_type(item, path)
    if mapped is not None:
        return _from_dict({"type": mapped, **item["kwargs"]}, path)
    kwargs = dict(item)
    role = kwargs.pop("role") if "role" in kwargs else kwargs.pop("type", _MISSING)
    content = kwargs.pop("content", _MISSING)
    if role is _MISSING or content is _MISSING:
        missing = "'role' (or 'type')" if role is _MISSING else "'content'"
        reason = f"a message object needs {missing}; got keys {sorted(map(str, item))}"
        raise InvalidMessage(path, reason, "ValueError")
    _check_keywords(kwargs, path)
    return _from_role(role, content or "", kwargs, path)


_MISSING: Final[Any] = object()


def _check_keywords(kwargs: dict[Any, Any], path: str) -> None:
    """LangChain passes the leftover keys as ``**kwargs``: Python's own checks apply."""
    for key in kwargs:
        if not isinstance(key, str):
            raise InvalidMessage(path, f"field names must be strings, got {key!r}", "TypeError")
    if "message_type" in kwargs:
        # The keyword collides with the role parameter of LangChain's message factory.
        reason = "'message_type' cannot be a field name"
        raise InvalidMessage(f"{path}.message_type", reason, "TypeError")


def _envelope_type(item: dict[Any, Any], path: str) -> str | None:
    """The message type of a ``{"lc": 1, "type": "constructor"}`` envelope, if it is one."""
    ident = item.get("id")
    if not (
        item.get("lc") == 1
        and item.get("type") == "constructor"
        and isinstance(ident, list)
        and ident
        and isinstance(item.get("kwargs"), dict)
    ):
        return None
    try:
        return _ENVELOPE_TYPES.get(ident[-1])
    except TypeError as exc:
        reason = f"expected a class name, got {type(ident[-1]).__name__}"
        raise InvalidMessage(f"{path}.id[{len(ident) - 1}]", reason, "TypeError") from exc


def _from_role(role: Any, content: Any, kwargs: dict[str, Any], path: str) -> BaseMessage:
    """LangChain's ``_create_message_from_message_type``."""
    popped = {k: kwargs.pop(k) for k in ("name", "tool_call_id", "id") if k in kwargs}
    named: dict[str, Any] = {k: v for k, v in popped.items() if v is not None}
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
    return _by_role(role, content, named, path)


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
    """OpenAI-shaped tool calls become LangChain ones; others pass on to validation.

    LangChain loops over any iterable and tests ``"function" in call``: a string entry
    is searched as a string, a number or null cannot be searched at all.
    """
    try:
        entries = list(calls)
    except TypeError as exc:
        reason = f"expected a list of tool calls, got {type(calls).__name__}"
        raise InvalidMessage(path, reason, "TypeError") from exc
    result: list[Any] = []
    for i, call in enumerate(entries):
        where = f"{path}[{i}]"
        try:
            openai_shaped = "function" in call
        except TypeError as exc:
            reason = f"expected a tool call object, got {type(call).__name__}"
            raise InvalidMessage(where, reason, "TypeError") from exc
        result.append(_openai_call(call, where) if openai_shaped else call)
    return result


def _openai_call(call: Any, path: str) -> dict[str, Any]:
    """One OpenAI tool call; checked in LangChain's order so the same error wins."""
    if not isinstance(call, dict):
        # A string or list that merely contains "function" cannot be indexed by name.
        reason = f"expected a tool call object, got {type(call).__name__}"
        raise InvalidMessage(path, reason, "TypeError")
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
        except RecursionError as exc:  # LangChain's json.loads raises it too
            reason = "arguments are nested too deeply to parse"
            raise InvalidMessage(f"{path}.function.arguments", reason, "RecursionError") from exc
    if "name" not in function:
        raise InvalidMessage(f"{path}.function.name", "required key is missing", "KeyError")
    if "id" not in call:
        raise InvalidMessage(f"{path}.id", "required key is missing", "KeyError")
    return {"name": function["name"], "args": args, "id": call["id"], "type": "tool_call"}


def _is_langchain_message(item: object) -> bool:
    dump = getattr(item, "model_dump", None)
    return isinstance(getattr(item, "type", None), str) and callable(dump)


def _from_langchain(item: Any, path: str) -> BaseMessage:
    """A LangChain message object, field for field as it stands.

    LangChain returns such an object unchanged, so its validators are not re-run: an
    AIMessageChunk built from ``invalid_tool_calls`` alone holds chunks that would
    re-derive different ``tool_calls``, and it must keep the ones it has.
    """
    dumped: dict[str, Any] = item.model_dump()
    cls = CLASS_OF.get(dumped.get("type", ""))
    if cls is None:
        reason = f"unknown LangChain message class {type(item).__name__}"
        raise InvalidMessage(path, reason, "NotImplementedError")
    own = set(cls.__struct_fields__) - {"extra"}
    values = {key: value for key, value in dumped.items() if key in own}
    extra = {key: value for key, value in dumped.items() if key not in {*own, "type"}}
    return cls(**values, extra=extra)
