"""The table's operations as HTTP carries them, derived from their fields and routes:
each argument's place (the path, the query string, the body), how a query string's
text becomes its value, the Struct a body decodes into. The HTTP API
(``threadfold.api.app``), its OpenAPI document and the HTTP clients (``threadfold.wire``)
all read an operation's HTTP form here, so none of them restates it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Final, TypeVar, Union, get_args, get_origin, get_type_hints

import msgspec

from threadfold.core.depth import path_text
from threadfold.core.errors import BadRequest
from threadfold.workers.threads.operations import OPERATIONS, Op

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Param:
    """One argument of an operation as HTTP carries it: where (path, query or body), its
    type, whether it is required, and how a query string's text becomes its value."""

    name: str
    where: str  # 'path', 'query', 'body'
    type: Any
    required: bool
    meta: msgspec.Meta | None
    default: Any = None
    parse: Callable[[str], object] | None = None


def params(op: type[Op[Any]]) -> tuple[Param, ...]:
    """The operation's fields as HTTP carries them, in their declared order."""
    return _PARAMS[op]


def _params(op: type[Op[Any]]) -> tuple[Param, ...]:
    assert op.route is not None
    hints = get_type_hints(op, include_extras=True)
    info = {f.name: f for f in msgspec.structs.fields(op)}
    found = []
    for name in op.__struct_fields__:
        kind, meta = _unwrap(hints[name])
        where = (
            "path" if name in op.route.path_fields else ("body" if op.route.body else "query")
        )
        required = info[name].required
        default = None if required else info[name].default
        parse = _parser(name, kind) if where == "query" else None
        found.append(Param(name, where, kind, required, meta, default, parse))
    return tuple(found)


def _unwrap(hint: Any) -> tuple[Any, msgspec.Meta | None]:
    if getattr(hint, "__metadata__", None):
        metas = [m for m in hint.__metadata__ if isinstance(m, msgspec.Meta)]
        return hint.__origin__, (metas[0] if metas else None)
    return hint, None


_INTEGER: Final = re.compile(r"-?[0-9]{1,20}")
_NUMBER: Final = re.compile(r"-?(?:[0-9]{1,20}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_BOOLEANS: Final = {"true": True, "false": False}


def _parser(name: str, kind: Any) -> Callable[[str], object]:
    """How a query string's text becomes the field's value: numbers in ASCII digits only
    (``int()`` and ``float()`` also take ' 3', '3_0', '+3', 'nan', 'infinity' and other
    scripts' digits: '٣' is 3; a leading '-' is let through to the range check, whose
    message says more), booleans as true/false, lists of message types comma-separated;
    the rest as text, for the operation's check to refuse."""
    options = set(get_args(kind)) if get_origin(kind) in (Union, UnionType) else {kind}
    if int in options:
        return lambda text: _number(text, name, integer=True)
    if float in options:
        return lambda text: _number(text, name, integer=False)
    if bool in options:
        return lambda text: _boolean(text, name)
    if any(getattr(o, "__origin__", None) is Sequence for o in options):
        return lambda text: text.split(",")
    return lambda text: text


def _number(text: str, name: str, *, integer: bool) -> float | int:
    if (_INTEGER if integer else _NUMBER).fullmatch(text) is None:
        kind = "an integer" if integer else "a number"
        raise BadRequest(f"{name}: expected {kind} in ASCII digits, got {text!r}", field=name)
    return int(text) if integer else float(text)


def _boolean(text: str, name: str) -> bool:
    if text not in _BOOLEANS:
        raise BadRequest(f"{name}: expected true or false, got {text!r}", field=name)
    return _BOOLEANS[text]


_PARAMS: Final = {op: _params(op) for op in OPERATIONS if op.route is not None}


def from_query(
    op: type[Op[R]], path: Mapping[str, str], items: Sequence[tuple[str, str]]
) -> Op[R]:
    """The operation a GET's path and query string ask for: names not declared and
    names given twice are refused, not guessed at; each value parsed by its field's
    type (the operation's check then judges it)."""
    declared = {p.name: p for p in _PARAMS[op] if p.where == "query"}
    # A required parameter left out reaches the check as None, which names it.
    given: dict[str, object] = {p.name: None for p in declared.values() if p.required}
    given.update(path)
    seen: set[str] = set()
    for name, text in items:
        param = declared.get(name)
        if param is None:
            where = path_text("", [name])
            raise BadRequest(f"{where}: unknown query parameter", field=where)
        if name in seen:
            raise BadRequest(f"{name}: given more than once", field=name)
        seen.add(name)
        assert param.parse is not None
        given[name] = param.parse(text)
    return op(**given)


def body_type(op: type[Op[Any]]) -> type[msgspec.Struct]:
    """The Struct an operation's JSON body decodes into: its fields that are not in the
    path, unknown fields refused; named as the OpenAPI document names it."""
    return _BODIES[op]


def _body_type(op: type[Op[Any]]) -> type[msgspec.Struct]:
    assert op.route is not None and op.route.body is not None
    hints = get_type_hints(op, include_extras=True)
    info = {f.name: f for f in msgspec.structs.fields(op)}
    fields: list[Any] = []
    for p in _PARAMS[op]:
        if p.where != "body":
            continue
        f = info[p.name]
        hint = hints[p.name]
        if f.required:
            fields.append((p.name, hint))
        else:
            fields.append((p.name, hint, f.default))
    body = msgspec.defstruct(
        op.route.body,
        fields,
        kw_only=True,
        forbid_unknown_fields=True,
        module=__name__,
    )
    body.__doc__ = op.__doc__
    return body


_BODIES: Final = {
    op: _body_type(op) for op in OPERATIONS if op.route is not None and op.route.body
}


def from_body(op: type[Op[R]], path: Mapping[str, str], body: msgspec.Struct) -> Op[R]:
    """The operation of a decoded body and the path's parameters."""
    values = {name: getattr(body, name) for name in body.__struct_fields__}
    return op(**path, **values)


