"""Tool calls, invalid tool calls and tool-call chunks, validated as LangChain does.

LangChain handles them in two separate steps, and which step refuses decides the
exception class, so both are reproduced:

1. **Factories** (AIMessage's before-validator): each entry of a non-empty list is
   rebuilt as ``tool_call(**entry)`` and friends. A value that is not iterable, an entry
   without ``.items()``, a non-string key, an unknown key or a missing keyword fails
   here, with a ``TypeError`` or ``AttributeError``.
2. **Field validation** (pydantic, after every before-validator): the rebuilt entries'
   value types. Everything refused here is a ``ValidationError``.

The raw OpenAI parsers (:func:`parse_raw_calls`, :func:`parse_raw_chunks`) are the
best-effort ones LangChain applies to ``additional_kwargs["tool_calls"]``.
"""

from __future__ import annotations

import json
from typing import Any, Final

from threadfold.core import fields
from threadfold.core.errors import InvalidMessage

_CALL_KEYS: Final = ("name", "args", "id")
_INVALID_KEYS: Final = ("name", "args", "id", "error")
_CHUNK_KEYS: Final = ("name", "args", "id", "index")


def _kind(value: object) -> str:
    return type(value).__name__


# --- step 1: the factories ---------------------------------------------------------


def _factory_entries(value: Any, path: str) -> list[dict[Any, Any]]:
    """The entries as LangChain's loop sees them: any iterable, each with ``.items()``."""
    try:
        entries = list(value)
    except TypeError as exc:
        reason = f"expected a list of objects, got {_kind(value)}"
        raise InvalidMessage(path, reason, "TypeError") from exc
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            reason = f"expected an object, got {_kind(entry)}"
            raise InvalidMessage(f"{path}[{i}]", reason, "AttributeError")
    return entries


def _keywords(
    given: dict[Any, Any], allowed: tuple[str, ...], required: tuple[str, ...], path: str
) -> None:
    """The checks Python makes when the factory is called with ``**given``."""
    for key in given:
        if not isinstance(key, str):
            raise InvalidMessage(path, f"keys must be strings, got {key!r}", "TypeError")
        if key not in allowed:
            reason = f"unexpected key {key!r}; allowed: {', '.join(allowed)}"
            raise InvalidMessage(f"{path}.{key}", reason, "TypeError")
    for key in required:
        if key not in given:
            raise InvalidMessage(f"{path}.{key}", "required key is missing", "TypeError")


def make_tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``tool_call(**entry)`` for each entry; ``type`` and ``extras`` are dropped first."""
    result: list[dict[str, Any]] = []
    for i, entry in enumerate(_factory_entries(value, path)):
        given = {k: v for k, v in entry.items() if k not in ("type", "extras")}
        _keywords(given, _CALL_KEYS, _CALL_KEYS, f"{path}[{i}]")
        result.append({**{k: given[k] for k in _CALL_KEYS}, "type": "tool_call"})
    return result


def make_invalid_tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``invalid_tool_call(**entry)`` for each entry; ``type`` is dropped first."""
    result: list[dict[str, Any]] = []
    for i, entry in enumerate(_factory_entries(value, path)):
        given = {k: v for k, v in entry.items() if k != "type"}
        _keywords(given, _INVALID_KEYS, (), f"{path}[{i}]")
        made = {k: given.get(k) for k in ("id", "name", "args", "error")}
        result.append({"type": "invalid_tool_call", **made})
    return result


def make_tool_call_chunks(value: Any, path: str) -> list[dict[str, Any]]:
    """``tool_call_chunk(**entry)`` for each entry; ``type`` is dropped first."""
    result: list[dict[str, Any]] = []
    for i, entry in enumerate(_factory_entries(value, path)):
        given = {k: v for k, v in entry.items() if k != "type"}
        _keywords(given, _CHUNK_KEYS, (), f"{path}[{i}]")
        result.append({**{k: given.get(k) for k in _CHUNK_KEYS}, "type": "tool_call_chunk"})
    return result


# --- step 2: pydantic's field validation -------------------------------------------


def _validated_entries(value: Any, path: str) -> list[dict[Any, Any]]:
    if not isinstance(value, list | tuple):
        raise fields.fail(path, f"expected a list, got {_kind(value)}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise fields.fail(f"{path}[{i}]", f"expected an object, got {_kind(entry)}")
    return list(value)


def _tag(entry: dict[Any, Any], tag: str, path: str) -> str:
    if "type" in entry and entry["type"] != tag:
        raise fields.fail(f"{path}.type", f"expected {tag!r}, got {entry['type']!r}")
    return tag


def _required(entry: dict[Any, Any], key: str, path: str) -> Any:
    if key not in entry:
        raise fields.fail(f"{path}.{key}", "required field is missing")
    return entry[key]


def tool_call(entry: dict[Any, Any], path: str) -> dict[str, Any]:
    """One ``ToolCall``: a string name, an object of args, a string or null id."""
    return {
        "name": fields.required_str(_required(entry, "name", path), f"{path}.name"),
        "args": fields.str_mapping(_required(entry, "args", path), f"{path}.args"),
        "id": fields.optional_str(_required(entry, "id", path), f"{path}.id"),
        "type": _tag(entry, "tool_call", path),
    }


def invalid_tool_call(entry: dict[Any, Any], path: str) -> dict[str, Any]:
    """One ``InvalidToolCall``: id, name, args and error, each a string or null."""
    result: dict[str, Any] = {"type": _tag(entry, "invalid_tool_call", path)}
    for key in ("id", "name", "args", "error"):
        result[key] = fields.optional_str(_required(entry, key, path), f"{path}.{key}")
    return result


def tool_call_chunk(entry: dict[Any, Any], path: str) -> dict[str, Any]:
    """One ``ToolCallChunk``: strings or null, and an integer or null ``index``."""
    result: dict[str, Any] = {
        key: fields.optional_str(_required(entry, key, path), f"{path}.{key}")
        for key in ("name", "args", "id")
    }
    result["index"] = fields.optional_int(_required(entry, "index", path), f"{path}.index")
    result["type"] = _tag(entry, "tool_call_chunk", path)
    return result


def tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessage.tool_calls``."""
    return [tool_call(e, f"{path}[{i}]") for i, e in enumerate(_validated_entries(value, path))]


def invalid_tool_calls(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessage.invalid_tool_calls``."""
    entries = _validated_entries(value, path)
    return [invalid_tool_call(e, f"{path}[{i}]") for i, e in enumerate(entries)]


def tool_call_chunks(value: Any, path: str) -> list[dict[str, Any]]:
    """``AIMessageChunk.tool_call_chunks``."""
    entries = _validated_entries(value, path)
    return [tool_call_chunk(e, f"{path}[{i}]") for i, e in enumerate(entries)]


# --- raw OpenAI tool calls in additional_kwargs -------------------------------------


def parse_raw_calls(raw: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Best-effort parse of raw OpenAI ``additional_kwargs.tool_calls`` for an AIMessage.

    Bad JSON arguments give an invalid tool call. Any other failure abandons the whole
    parse (``None``): LangChain logs it at debug level and leaves the fields as given.
    The entries still go through the factories afterwards, as in LangChain.
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
