"""Tool calls, invalid tool calls and tool-call chunks, validated as LangChain does.

LangChain rebuilds each entry through its factory (``tool_call(**entry)`` and friends)
before pydantic sees it: a missing keyword or an unknown key is a ``TypeError`` there,
a wrong value type a ``ValidationError`` after. Both are reproduced, with the path.
"""

from __future__ import annotations

import json
from typing import Any, Final

from core import fields
from core.errors import InvalidMessage

_CALL_KEYS: Final = ("name", "args", "id")
_INVALID_KEYS: Final = ("name", "args", "id", "error")
_CHUNK_KEYS: Final = ("name", "args", "id", "index")


def _entries(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        # LangChain iterates the value and calls .items() on each entry.
        raise InvalidMessage(path, "expected a list of objects", "AttributeError")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise InvalidMessage(f"{path}[{i}]", "expected an object", "AttributeError")
    return list(value)


def _unknown_key(entry: dict[str, Any], allowed: tuple[str, ...], path: str) -> None:
    for key in entry:
        if key not in allowed:
            raise InvalidMessage(f"{path}.{key}", "unexpected key", "TypeError")


def tool_call(entry: dict[str, Any], path: str) -> dict[str, Any]:
    """One ``ToolCall``: name, args and id are required; ``type``/``extras`` are dropped."""
    given = {k: v for k, v in entry.items() if k not in ("type", "extras")}
    _unknown_key(given, _CALL_KEYS, path)
    for key in _CALL_KEYS:
        if key not in given:
            raise InvalidMessage(f"{path}.{key}", "tool call needs this key", "TypeError")
    return {
        "name": fields.required_str(given["name"], f"{path}.name"),
        "args": fields.mapping(given["args"], f"{path}.args"),
        "id": fields.optional_str(given["id"], f"{path}.id"),
        "type": "tool_call",
    }


def invalid_tool_call(entry: dict[str, Any], path: str) -> dict[str, Any]:
    """One ``InvalidToolCall``: every key optional, each a string or null."""
    given = {k: v for k, v in entry.items() if k != "type"}
    _unknown_key(given, _INVALID_KEYS, path)
    result: dict[str, Any] = {"type": "invalid_tool_call"}
    for key in ("id", "name", "args", "error"):
        result[key] = fields.optional_str(given.get(key), f"{path}.{key}")
    return result


def tool_call_chunk(entry: dict[str, Any], path: str) -> dict[str, Any]:
    """One ``ToolCallChunk``: every key optional; ``index`` is an int or null."""
    given = {k: v for k, v in entry.items() if k != "type"}
    _unknown_key(given, _CHUNK_KEYS, path)
    return {
        "name": fields.optional_str(given.get("name"), f"{path}.name"),
        "args": fields.optional_str(given.get("args"), f"{path}.args"),
        "id": fields.optional_str(given.get("id"), f"{path}.id"),
        "index": fields.optional_int(given.get("index"), f"{path}.index"),
        "type": "tool_call_chunk",
    }


def tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessage.tool_calls``."""
    return [tool_call(e, f"{path}[{i}]") for i, e in enumerate(_entries(value, path))]


def invalid_tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessage.invalid_tool_calls``."""
    return [invalid_tool_call(e, f"{path}[{i}]") for i, e in enumerate(_entries(value, path))]


def tool_call_chunks(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessageChunk.tool_call_chunks``."""
    return [tool_call_chunk(e, f"{path}[{i}]") for i, e in enumerate(_entries(value, path))]


def parse_raw_calls(raw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Best-effort parse of raw OpenAI ``additional_kwargs.tool_calls`` for an AIMessage.

    Bad JSON arguments give an invalid tool call. Any other failure abandons the whole
    parse (``None``): LangChain logs it at debug level and leaves the fields as given.
    The entries still go through :func:`tool_call` afterwards, as in LangChain.
    """
    calls: list[dict[str, Any]] = []
    invalid: list[dict[str, Any]] = []
    try:
        for raw_call in raw:
            if "function" not in raw_call:
                continue
            name = raw_call["function"]["name"]
            arguments = raw_call["function"]["arguments"]
            try:
                args = json.loads(arguments)
            except json.JSONDecodeError:
                entry = {"name": name, "args": arguments, "id": raw_call.get("id"), "error": None}
                invalid.append(entry)
                continue
            calls.append({"name": name or "", "args": args or {}, "id": raw_call.get("id")})
    except Exception:  # noqa: BLE001  # LangChain swallows every failure here
        return None
    return calls, invalid


def parse_raw_chunks(raw: Any) -> list[dict[str, Any]] | None:
    """Best-effort parse of raw OpenAI ``additional_kwargs.tool_calls`` for a chunk."""
    chunks: list[dict[str, Any]] = []
    try:
        for raw_call in raw:
            name = args = None
            if "function" in raw_call:
                args = raw_call["function"]["arguments"]
                name = raw_call["function"]["name"]
            entry = {"name": name, "args": args, "id": raw_call.get("id")}
            entry["index"] = raw_call.get("index")
            chunks.append(entry)
    except Exception:  # noqa: BLE001  # LangChain swallows every failure here
        return None
    return chunks
