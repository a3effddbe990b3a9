"""Build one message the way ``Cls(**kwargs)`` does in langchain-core 1.8.3.

The order is LangChain's, and it decides which exception class a bad input gets:
Python's own ``**kwargs`` checks (a non-string key, a ``self`` key: ``TypeError``), the
class's ``__init__`` (content_blocks, RemoveMessage's id), its before-validators
(ToolMessage ``coerce_args``; AIMessage's tool-call factories, ``TypeError`` or
``AttributeError``), pydantic's field validation (always ``ValidationError``), then
AIMessageChunk's after-validator ``init_tool_calls``. Keys that are not fields become
extra fields, as with ``extra="allow"``. Each refusal names the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import msgspec

from threadfold.core import fields, toolcalls
from threadfold.core.chunks import init_tool_calls
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import (
    MESSAGE_CLASSES,
    TYPE_OF,
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    RemoveMessage,
    ToolMessage,
)

Validator = Callable[[Any, str], Any]

_COMMON: Final[dict[str, Validator]] = {
    "additional_kwargs": fields.mapping,
    "response_metadata": fields.mapping,
    "name": fields.optional_str,
    "id": fields.message_id,
}
_AI: Final[dict[str, Validator]] = {
    "tool_calls": toolcalls.tool_calls,
    "invalid_tool_calls": toolcalls.invalid_tool_calls,
    "usage_metadata": fields.usage_metadata,
}
_AI_CHUNK: Final[dict[str, Validator]] = {
    **_AI,
    "tool_call_chunks": toolcalls.tool_call_chunks,
    "chunk_position": lambda v, p: None if v is None else fields.literal(v, ("last",), p),
}
_TOOL: Final[dict[str, Validator]] = {
    "tool_call_id": fields.required_str,
    "artifact": lambda v, p: v,
    "status": lambda v, p: fields.literal(v, ("success", "error"), p),
}


def _validators(cls: type[BaseMessage]) -> dict[str, Validator]:
    specific: dict[str, Validator] = {}
    if issubclass(cls, AIMessageChunk):
        specific = _AI_CHUNK
    elif issubclass(cls, AIMessage):
        specific = _AI
    elif issubclass(cls, ToolMessage):
        specific = _TOOL
    elif issubclass(cls, FunctionMessage):
        specific = {"name": fields.required_str}
    elif issubclass(cls, ChatMessage):
        specific = {"role": fields.required_str}
    return {**_COMMON, **specific}


_VALIDATORS: Final = {cls: _validators(cls) for cls in MESSAGE_CLASSES}
_REQUIRED: Final = {
    cls: tuple(f.name for f in msgspec.structs.fields(cls) if f.required and f.name != "content")
    for cls in MESSAGE_CLASSES
}


def build(cls: type[BaseMessage], kwargs: dict[Any, Any], path: str) -> BaseMessage:
    """``cls(**kwargs)`` with LangChain's validation; ``kwargs`` is not mutated."""
    _check_keywords(kwargs, path)
    values = _init(cls, dict(kwargs), path)
    if issubclass(cls, ToolMessage):
        _coerce_tool(values, path)
    elif issubclass(cls, AIMessage):
        _normalise_ai(cls, values, path)
    tag = TYPE_OF[cls]
    if "type" in values and values.pop("type") != tag:
        raise fields.fail(f"{path}.type", f"expected {tag!r}")
    result = _validate(cls, values, path)
    if cls is AIMessageChunk:
        _derive_tool_calls(result, path)
    return cls(**result)


def _check_keywords(kwargs: dict[Any, Any], path: str) -> None:
    """What Python itself refuses in ``cls(**kwargs)``, before any LangChain code runs."""
    for key in kwargs:
        if not isinstance(key, str):
            raise InvalidMessage(path, f"field names must be strings, got {key!r}", "TypeError")
    if "self" in kwargs:
        # Every message class's __init__ takes ``self``: a "self" key collides with it.
        raise InvalidMessage(f"{path}.self", "'self' cannot be a field name", "TypeError")


def _init(cls: type[BaseMessage], values: dict[str, Any], path: str) -> dict[str, Any]:
    """What the classes' ``__init__`` do before pydantic runs."""
    if cls is RemoveMessage:
        if "id" not in values:
            raise InvalidMessage(f"{path}.id", "remove message needs an 'id'", "TypeError")
        if values.pop("content", None):
            reason = "remove message does not support 'content'"
            raise InvalidMessage(f"{path}.content", reason, "ValueError")
        values["content"] = ""
    blocks = values.pop("content_blocks", None)
    if blocks is not None:
        if issubclass(cls, AIMessage):
            _calls_from_blocks(blocks, values, f"{path}.content_blocks")
        values["content"] = blocks
    values.setdefault("content", None)
    return values


def _calls_from_blocks(blocks: Any, values: dict[str, Any], path: str) -> None:
    """AIMessage's ``__init__``: ``tool_call`` blocks fill ``tool_calls`` when it is absent."""
    try:
        entries = list(blocks)
    except TypeError as exc:
        reason = f"expected a list of blocks, got {type(blocks).__name__}"
        raise InvalidMessage(path, reason, "TypeError") from exc
    for i, block in enumerate(entries):
        if not isinstance(block, dict):
            reason = f"expected an object, got {type(block).__name__}"
            raise InvalidMessage(f"{path}[{i}]", reason, "AttributeError")
    calls = [block for block in entries if block.get("type") == "tool_call"]
    if calls and "tool_calls" not in values:
        values["tool_calls"] = calls


def _coerce_tool(values: dict[str, Any], path: str) -> None:
    """ToolMessage's ``coerce_args``: lenient content, stringified ``tool_call_id``."""
    values["content"] = fields.tool_content(values["content"])
    if "tool_call_id" not in values:
        reason = "tool message needs 'tool_call_id'"
        raise InvalidMessage(f"{path}.tool_call_id", reason, "KeyError")
    values["tool_call_id"] = fields.tool_call_id(values["tool_call_id"], f"{path}.tool_call_id")


_FACTORIES: Final[tuple[tuple[str, Validator], ...]] = (
    ("tool_calls", toolcalls.make_tool_calls),
    ("invalid_tool_calls", toolcalls.make_invalid_tool_calls),
    ("tool_call_chunks", toolcalls.make_tool_call_chunks),
)


def _normalise_ai(cls: type[BaseMessage], values: dict[str, Any], path: str) -> None:
    """AIMessage's before-validator: raw OpenAI tool calls, then the factories.

    The factories run on every non-empty list, ``tool_call_chunks`` included even on a
    plain AIMessage (where it is then kept as an extra field), as in LangChain.
    """
    if not any(values.get(key) for key, _ in _FACTORIES):
        extras = values.get("additional_kwargs", {})
        if not isinstance(extras, dict):
            reason = f"expected an object, got {type(extras).__name__}"
            raise InvalidMessage(f"{path}.additional_kwargs", reason, "AttributeError")
        raw = extras.get("tool_calls")
        if raw:
            _parse_raw(cls, values, raw)
    for key, make in _FACTORIES:
        if values.get(key):
            values[key] = make(values[key], f"{path}.{key}")


def _parse_raw(cls: type[BaseMessage], values: dict[str, Any], raw: Any) -> None:
    if issubclass(cls, AIMessageChunk):
        chunks = toolcalls.parse_raw_chunks(raw)
        if chunks is not None:
            values["tool_call_chunks"] = chunks
        return
    parsed = toolcalls.parse_raw_calls(raw)
    if parsed is not None:
        values["tool_calls"], values["invalid_tool_calls"] = parsed


def _validate(cls: type[BaseMessage], values: dict[str, Any], path: str) -> dict[str, Any]:
    """pydantic's field validation; keys that are not fields become extras."""
    content = values.pop("content")
    if content is None:
        raise fields.fail(f"{path}.content", "expected a string or a list, got null")
    result: dict[str, Any] = {"content": fields.content(content, f"{path}.content")}
    for field in _REQUIRED[cls]:
        if field not in values:
            raise fields.fail(f"{path}.{field}", "required field is missing")
    validators = _VALIDATORS[cls]
    extra: dict[str, Any] = {}
    for key, value in values.items():
        check = validators.get(key)
        if check is None:
            extra[key] = value
        else:
            result[key] = check(value, f"{path}.{key}")
    if extra:
        result["extra"] = extra
    return result


def _derive_tool_calls(values: dict[str, Any], path: str) -> None:
    """AIMessageChunk's after-validator, on the validated values."""
    try:
        derived = init_tool_calls(
            content=values["content"],
            response_metadata=values.get("response_metadata", {}),
            chunk_position=values.get("chunk_position"),
            tool_calls=values.get("tool_calls", []),
            invalid_tool_calls=values.get("invalid_tool_calls", []),
            tool_call_chunks=values.get("tool_call_chunks", []),
        )
    except (TypeError, ValueError) as exc:
        # Chunks are derived from the tool calls with json.dumps (bytes, a set or a cycle
        # in the arguments, from Python callers): pydantic lets its TypeError through and
        # wraps its ValueError (a cycle) in a ValidationError.
        lc_error = "TypeError" if isinstance(exc, TypeError) else "ValidationError"
        raise InvalidMessage(_unencodable(values, path), str(exc), lc_error) from exc
    (
        values["content"],
        values["tool_calls"],
        values["invalid_tool_calls"],
        values["tool_call_chunks"],
    ) = derived


def _unencodable(values: dict[str, Any], path: str) -> str:
    """Where the tool call is whose arguments json.dumps refused (the failing path)."""
    for k, call in enumerate(values.get("tool_calls", [])):
        try:
            json.dumps(call["args"])
        except (TypeError, ValueError):
            return f"{path}.tool_calls[{k}].args"
    return f"{path}.tool_calls"
