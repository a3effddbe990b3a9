"""The common message dicts, converted without the general machinery.

Most traffic is a handful of shapes: ``{"role": "user", "content": "..."}`` and its
``type``/``id``/``name`` variants, tool results, and assistant messages with OpenAI
tool calls. For those, the general path (:mod:`threadfold.core.convert`,
:mod:`threadfold.core.construct`) spends most of its time proving that nothing unusual is present.
Here each shape is
recognised by its exact key set and value types, and built directly; anything else
returns ``None`` and goes the general way. The differential tests run every input
through both, so the two cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from threadfold.core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

_PLAIN: Final[dict[str, type[BaseMessage]]] = {
    "user": HumanMessage,
    "human": HumanMessage,
    "assistant": AIMessage,
    "ai": AIMessage,
    "system": SystemMessage,
}
_COMMON: Final = frozenset({"content", "id", "name", "response_metadata", "additional_kwargs"})
_PLAIN_KEYS: Final = _COMMON | {"role"}
_TYPED_KEYS: Final = _COMMON | {"type"}
_TOOL_KEYS: Final = frozenset(
    {"content", "id", "name", "tool_call_id", "status", "artifact", "response_metadata"}
)
_PLAIN_CALL_KEYS: Final = _PLAIN_KEYS | {"tool_calls"}
_TYPED_CALL_KEYS: Final = _TYPED_KEYS | {"tool_calls"}
_TOOL_ANY_KEYS: Final = _TOOL_KEYS | {"role", "type"}
_CALL_KEYS: Final = frozenset({"id", "type", "function"})
_FUNCTION_KEYS: Final = frozenset({"name", "arguments"})
_LC_CALL_KEYS: Final = frozenset({"name", "args", "id", "type", "extras"})
# additional_kwargs keys the general path lifts into fields: not for the fast path.
_LIFTED: Final = frozenset({"example", "tool_calls", "artifact", "status"})
_json_object = msgspec.json.Decoder(dict[str, Any])


_NO_EXTRAS: Final[tuple[dict[str, Any], dict[str, Any]]] = ({}, {})


def fast_message(item: dict[Any, Any]) -> BaseMessage | None:
    """The message for a common dict shape, or None to take the general path."""
    head = _head(item)
    if head is None:
        return None
    role, content, ident, name = head
    cls = _PLAIN.get(role)
    if (
        cls is not None
        and "additional_kwargs" not in item
        and "response_metadata" not in item
        and item.keys() <= (_PLAIN_KEYS if "role" in item else _TYPED_KEYS)
    ):
        return cls(content=content, id=ident, name=name)  # the commonest case, first
    return _with_extras(item, role, cls, content, ident, name)


def _with_extras(  # noqa: PLR0917  # the fields _head already read, passed on
    item: dict[Any, Any],
    role: str,
    cls: type[BaseMessage] | None,
    content: str | list[Any],
    ident: str | None,
    name: str | None,
) -> BaseMessage | None:
    extras = (
        _dicts(item) if "additional_kwargs" in item or "response_metadata" in item else _NO_EXTRAS
    )
    if extras is None:
        return None
    if cls is not None and item.keys() <= (_PLAIN_KEYS if "role" in item else _TYPED_KEYS):
        if extras is _NO_EXTRAS:
            return cls(content=content, id=ident, name=name)
        # Spelled out: building and unpacking a kwargs dict costs as much as the Struct.
        return cls(
            content=content,
            id=ident,
            name=name,
            additional_kwargs=extras[0],
            response_metadata=extras[1],
        )
    if role == "tool" and not extras[0]:
        return _tool(item, content, ident, name, _fields(extras))
    if cls is AIMessage and "tool_calls" in item:
        return _assistant_with_calls(item, content, ident, name, _fields(extras))
    return None


def _head(item: dict[Any, Any]) -> tuple[str, str | list[Any], str | None, str | None] | None:
    """Role, content, id and name, when each is of the plain kind."""
    if "role" in item:
        if "type" in item:  # the leftover "type" would go to additional_kwargs
            return None
        role = item["role"]
    else:
        role = item.get("type")
    content = item.get("content", _ABSENT)
    if type(content) is not str:
        content = _content(content)
    ident, name = item.get("id"), item.get("name")
    if (
        type(role) is not str
        or content is None
        or (ident is not None and type(ident) is not str)
        or (name is not None and type(name) is not str)
    ):
        return None
    return role, content, ident, name


def _fields(extras: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """Keyword arguments for the two dict fields; none when empty, so that each message
    gets fresh default dicts (the shared ``_NO_EXTRAS`` pair must never be stored)."""
    if extras is _NO_EXTRAS:
        return {}
    return {"additional_kwargs": extras[0], "response_metadata": extras[1]}


def _dicts(item: dict[Any, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(additional_kwargs, response_metadata)`` as the general path leaves them.

    A falsy response_metadata is dropped there; a nested additional_kwargs is merged
    into the (otherwise empty) leftovers, unless it holds keys that path lifts out.
    """
    extras, metadata = item.get("additional_kwargs", {}), item.get("response_metadata")
    if type(extras) is not dict or (extras and not extras.keys().isdisjoint(_LIFTED)):
        return None
    if metadata is None or (type(metadata) is dict and not metadata):
        return dict(extras), {}  # fresh dicts: messages must not share mutable defaults
    if type(metadata) is not dict:
        return None
    return dict(extras), dict(metadata)


_ABSENT: Final[Any] = object()


def _content(value: Any) -> str | list[Any] | None:
    """Content as the dict path leaves it (falsy -> ""), or None when unusual."""
    if type(value) is str:
        return value
    if value is None or (type(value) is list and not value):
        return ""
    if type(value) is list and all(type(x) is str or type(x) is dict for x in value):
        return list(value)
    return None


def _tool(
    item: dict[Any, Any],
    content: Any,
    ident: str | None,
    name: str | None,
    fields: dict[str, Any],
) -> BaseMessage | None:
    # Exactly one of role/type, and no key the general path would treat specially.
    if ("role" in item) == ("type" in item) or not item.keys() <= _TOOL_ANY_KEYS:
        return None
    call_id = item.get("tool_call_id")
    status = item.get("status")
    if type(call_id) is not str or status not in (None, "success", "error"):
        return None
    if type(content) is list:
        return None  # list items go through str() in ToolMessage: leave it to the general path
    return ToolMessage(
        content=content,
        tool_call_id=call_id,
        artifact=item.get("artifact"),
        status=status or "success",
        id=ident,
        name=name,
        response_metadata=fields.get("response_metadata", {}),
    )


def _assistant_with_calls(
    item: dict[Any, Any],
    content: Any,
    ident: str | None,
    name: str | None,
    fields: dict[str, Any],
) -> BaseMessage | None:
    if not item.keys() <= (_PLAIN_CALL_KEYS if "role" in item else _TYPED_CALL_KEYS):
        return None
    raw = item["tool_calls"]
    if type(raw) is not list or not raw:
        return None
    calls = []
    for entry in raw:
        if type(entry) is not dict:
            return None
        call = _openai_call(entry) if "function" in entry else _langchain_call(entry)
        if call is None:
            return None
        calls.append(call)
    if not fields:  # no **{}: unpacking an empty dict costs as much as the Struct
        return AIMessage(content=content, tool_calls=calls, id=ident, name=name)
    return AIMessage(content=content, tool_calls=calls, id=ident, name=name, **fields)


def _langchain_call(entry: Any) -> dict[str, Any] | None:
    """``{"name", "args", "id"}`` (``type``/``extras`` dropped, as LangChain does)."""
    if type(entry) is not dict or not entry.keys() <= _LC_CALL_KEYS:
        return None
    name, args, call_id = entry.get("name"), entry.get("args"), entry.get("id", _ABSENT)
    if type(name) is not str or type(args) is not dict:
        return None
    if not (call_id is None or type(call_id) is str):
        return None
    if not all(type(k) is str for k in args):
        return None
    return {"name": name, "args": dict(args), "id": call_id, "type": "tool_call"}


def _openai_call(entry: Any) -> dict[str, Any] | None:
    """``{"id", "type": "function", "function": {"name", "arguments": "<json>"}}``."""
    if type(entry) is not dict or not entry.keys() <= _CALL_KEYS:
        return None
    function, call_id = entry.get("function"), entry.get("id", _ABSENT)
    if type(function) is not dict or function.keys() != _FUNCTION_KEYS:
        return None
    fname, arguments = function["name"], function["arguments"]
    if type(fname) is not str or type(arguments) is not str:
        return None
    if not (call_id is None or type(call_id) is str):
        return None
    args = _json_args(arguments)
    if args is None:
        return None
    return {"name": fname, "args": args, "id": call_id, "type": "tool_call"}


def _json_args(text: str) -> dict[str, Any] | None:
    """A JSON object, decoded fast; anything msgspec refuses is left to ``json.loads``
    (NaN, control characters in strings, huge integers: the general path knows them)."""
    try:
        args: dict[str, Any] = _json_object.decode(text)
    except msgspec.DecodeError:  # ValidationError (not an object, 1e400) is a subclass
        return None
    except RecursionError:  # nested too deeply: the general path says where
        return None
    return args
