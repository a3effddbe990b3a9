"""A read's page of stored messages in the format asked: it never fails on a message.

Ingestion refuses a message that cannot be served (:mod:`threadfold.core.servable`, and
the codec's JSON check), but a thread can still hold one: stored before those checks,
by an older release, or written into Redis by hand. It made every read of the thread in
that format a 500, for good: ``?format=openai`` for a block LangChain's converter
refuses (or a system role override that is not a string), both formats for a dict key
JSON cannot carry (``None``, ``True``, a tuple: msgpack stores them).

Such a message is served as a **marker** in its place, and the page names it beside its
messages (:class:`Flaw`, noted as an :class:`Unservable`: where the marker stands in the
page, the message's id, where in the message and why), so the rest of the thread stays
readable and the client can replace or remove the message by its id. A marker is a
message of the format asked, which its consumer takes as it takes the others; its
content is a text saying what is wrong. In the OpenAI form it keeps the role, name, tool
calls and tool call id that render (the tool result after it still answers its call);
OpenAI refuses a message with a key it does not know, so the flag is the page's only. In
LangChain's form it keeps every field JSON can carry (the others get their defaults) and
is flagged in its ``additional_kwargs`` (:data:`FLAG`), which LangChain loads and
providers ignore. Why a marker and not a 422 for the whole read: docs/semantics.md.

A page is rendered as before, then encoded once to check that JSON carries it (0.17 us
a message in LangChain's form, next to ~0.4 of dumping it; 0.1 in OpenAI's, next to 2-5
of converting it); only a page that fails is rendered again, message by message, to
find which. The API's JSON cache (threadfold.api.fragments) encodes each message anyway
and marks the one that fails with :func:`serve`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import msgspec

from threadfold.core.depth import Step, path_text
from threadfold.core.dump import dump_message, dump_messages
from threadfold.core.errors import InvalidMessage
from threadfold.core.messages import (
    MESSAGE_CLASSES,
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from threadfold.core.openai import message_to_openai, to_openai
from threadfold.core.openai_head import function_call, message_head

#: The forms a page is served in: LangChain's ``model_dump()`` form, or OpenAI's chat form.
Format: TypeAlias = Literal["langchain", "openai"]
FORMATS: Final[tuple[Format, ...]] = ("langchain", "openai")

#: The ``additional_kwargs`` key that flags a marker in LangChain's form.
FLAG: Final = "threadfold_unservable"
#: What a page calls a message it serves as a marker.
CODE: Final = "unservable"

_JSON: Final = msgspec.json.Encoder()


class Unservable(msgspec.Struct, frozen=True):
    """A stored message a page serves as a marker in its place: it cannot be served in
    the format asked (stored before ingestion refused such messages, or written into
    Redis by hand). ``index`` (``field``, ``pointer``) is where the marker stands in the
    page's messages, ``id`` the message's id (replace or remove it by id), ``message``
    says why; ``code`` is ``"unservable"``. The one form of a marker's note, in a state
    read, an event and every client's results."""

    code: str
    message: str
    field: str
    pointer: str
    index: int
    id: str | None


@dataclass(frozen=True, slots=True)
class Flaw:
    """A stored message a page serves as a marker: where the marker stands in the page
    (``index``), the message's ``id``, the ``format`` asked, and why (``reason``: where
    in the message, then what; LangChain's words where it is LangChain that refuses)."""

    index: int
    id: str | None
    format: str
    reason: str

    @property
    def field(self) -> str:
        return f"messages[{self.index}]"

    @property
    def pointer(self) -> str:
        return f"/messages/{self.index}"

    @property
    def message(self) -> str:
        what = f"cannot be served with format={self.format}: {self.reason}"
        return f"{self.field} (id {self.id!r}) {what}"

    def item(self) -> Unservable:
        """The page's note of this marker."""
        return Unservable(CODE, self.message, self.field, self.pointer, self.index, self.id)


@dataclass(frozen=True, slots=True)
class Rendered:
    """A page's messages as served (markers in place), and the markers named."""

    messages: list[dict[str, Any]]
    unservable: list[Flaw]


def render(messages: Sequence[BaseMessage], fmt: str) -> Rendered:
    """``messages`` in ``fmt`` (``"langchain"`` or ``"openai"``), every one as served or
    as its marker: never raises for a message."""
    try:
        served = to_openai(messages) if fmt == "openai" else dump_messages(messages)
        _JSON.encode(served)  # as the reply will be: a failure there could not be located
    except Exception:  # noqa: BLE001  # some message cannot be served: found one by one
        return _one_by_one(messages, fmt)
    return Rendered(served, [])


def _one_by_one(messages: Sequence[BaseMessage], fmt: str) -> Rendered:
    out: list[dict[str, Any]] = []
    unservable: list[Flaw] = []
    for message in messages:
        served, flaw = serve(message, fmt, len(out))
        out.extend(served)
        if flaw is not None:
            unservable.append(flaw)
    return Rendered(out, unservable)


def serve(
    message: BaseMessage, fmt: str, index: int
) -> tuple[list[dict[str, Any]], Flaw | None]:
    """``message`` as served at ``index`` of a page (in the OpenAI form, a ``tool_result``
    block adds tool messages), or its marker and why."""
    where = f"messages[{index}]"
    try:
        served = message_to_openai(message, where) if fmt == "openai" else [dump_message(message)]
        for one in served:
            _check_json(one, where)
    except Exception as exc:  # noqa: BLE001  # whatever rendering raises is the message's
        flaw = Flaw(index, message.id, fmt, _reason(exc, where))
        return [marker(message, flaw)], flaw
    return served, None


def marker(message: BaseMessage, flaw: Flaw) -> dict[str, Any]:
    """What a page serves in place of ``message``: a message of the format, whose
    content says why the message itself cannot be served."""
    what = f"cannot be served with format={flaw.format}: {flaw.reason}"
    text = f"[threadfold: message {message.id!r} {what}]"
    if flaw.format != "openai":
        return _langchain_marker(message, text, flaw)
    try:
        head = message_head(message, False, "")
        _JSON.encode(head)
    except Exception:  # noqa: BLE001  # the head is what fails: only what surely renders
        head = _plain_head(message)
    head["content"] = text  # last, where the converter puts it
    return head


# --- where and why ---------------------------------------------------------------------


def _reason(exc: Exception, where: str) -> str:
    """The error, located within the message at ``where`` when it says where."""
    if not isinstance(exc, InvalidMessage):
        return f"{type(exc).__name__}: {exc}"
    rest = exc.path.removeprefix(where)
    if rest == exc.path or rest[:1] not in ("", ".", "["):
        return str(exc)
    rest = rest.removeprefix(".")
    return f"{rest}: {exc.reason}" if rest else exc.reason


def _check_json(value: dict[str, Any], where: str) -> None:
    """Raise, naming the place, when JSON cannot carry ``value`` (a message as served)."""
    if not _encodes(value):
        steps, what = _not_json(value)
        raise InvalidMessage(path_text(where, steps), what)


def _encodes(value: Any) -> bool:
    try:
        _JSON.encode(value)
    except Exception:  # noqa: BLE001  # a type, a key, an overflow, a depth: all refusals
        return False
    return True


def _not_json(value: Any) -> tuple[list[Step], str]:
    """The steps to the first thing JSON cannot carry in ``value``, and what it is
    (a loop, not a recursion: stored data may nest as deep as msgpack let it)."""
    steps: list[Step] = []
    while isinstance(value, dict | list | tuple):
        is_dict = isinstance(value, dict)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if is_dict and not _encodes({key: None}):
                return steps, f"has a key JSON cannot carry ({key!r})"
            if not _encodes(item):
                steps.append(str(key) if is_dict else key)
                value = item
                break
        else:
            break
    try:
        _JSON.encode(value)
    except Exception as exc:  # noqa: BLE001  # its own words
        return steps, f"holds a value that is not JSON data ({exc})"
    return steps, "holds a value that is not JSON data"


# --- the markers -------------------------------------------------------------------------

_ROLES: Final[tuple[tuple[type[BaseMessage], str], ...]] = (
    (AIMessage, "assistant"),
    (HumanMessage, "user"),
    (ToolMessage, "tool"),
    (SystemMessage, "system"),  # a role override is what can fail
    (FunctionMessage, "function"),
)


def _plain_head(message: BaseMessage) -> dict[str, Any]:
    """The OpenAI keys of ``message`` but ``content`` from what cannot fail: its class's
    role, its name, the tool calls that render, its tool call id."""
    role = next((r for cls, r in _ROLES if isinstance(message, cls)), "system")
    if isinstance(message, ChatMessage):
        role = message.role
    head: dict[str, Any] = {"role": role}
    if message.name:
        head["name"] = message.name
    if isinstance(message, AIMessage):
        calls = [call for call in map(_call, message.tool_calls) if call is not None]
        if calls:
            head["tool_calls"] = calls
    if isinstance(message, ToolMessage):
        head["tool_call_id"] = message.tool_call_id
    return head


def _call(call: dict[str, Any]) -> dict[str, Any] | None:
    try:
        arguments = json.dumps(call["args"], ensure_ascii=False)  # as the converter writes them
        rendered = function_call(call["id"], call["name"], arguments)
        _JSON.encode(rendered)
    except Exception:  # noqa: BLE001  # a call that cannot render is left out
        return None
    return rendered


_OPTIONAL: Final = {  # a message's fields that have a default, by class
    cls: {f.name: f for f in msgspec.structs.fields(cls) if not f.required}
    for cls in MESSAGE_CLASSES
}


def _default(info: msgspec.structs.FieldInfo) -> Any:
    if info.default_factory is not msgspec.NODEFAULT:
        return info.default_factory()  # a new {} or [] for each marker
    return info.default


def _langchain_marker(message: BaseMessage, text: str, flaw: Flaw) -> dict[str, Any]:
    """LangChain's form of ``message`` with ``text`` as content, every field JSON cannot
    carry reset to its default (an extra field left out), flagged."""
    optional = _OPTIONAL[type(message)]
    out: dict[str, Any] = {}
    for key, value in dump_message(message).items():
        if key == "content":
            out[key] = text
        elif _encodes(value):
            out[key] = value
        elif key in optional:
            out[key] = _default(optional[key])
    flag = {"code": CODE, "format": flaw.format, "reason": flaw.reason}
    out["additional_kwargs"] = {**out["additional_kwargs"], FLAG: flag}
    return out
