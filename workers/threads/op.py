"""What an operation of the table is (:mod:`.operations`): its arguments as a msgspec
Struct (:class:`Op`) and how it travels over HTTP (:class:`Route`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, ClassVar, Final, Generic, TypeVar

import msgspec

R = TypeVar("R")

#: A stream id in ASCII digits (each part is also at most 2**64-1, which a pattern
#: cannot say).
VERSION_PATTERN: Final = "^[0-9]{1,20}-[0-9]{1,20}$"


@dataclass(frozen=True, slots=True)
class Route:
    """How an operation travels over HTTP: its method and path (``{thread_id}`` is the
    operation's field of that name), its success status, and the statuses it answers
    with a meaning of its own (409 and 410 of time travel, ...), described. Every other
    refusal of the error tree may answer any route. ``body`` names the request body's
    schema (its fields are the operation's that are not in the path); without one, the
    arguments are the query string's."""

    method: str
    path: str
    status: int
    summary: str
    body: str | None = None
    refusals: Mapping[int, str] = field(default_factory=dict)
    #: What the answer's body is, when it is not the operation's result (a bulk's
    #: ``{"results": [...]}``); None: no body (204).
    answer: str | None = ""

    @property
    def path_fields(self) -> tuple[str, ...]:
        return _path_fields(self.path)


class Op(msgspec.Struct, Generic[R], frozen=True, kw_only=True, omit_defaults=True):
    """A thread operation's arguments, as its caller gave them (checked by the service,
    with the refusal naming the argument)."""

    #: The service's method that runs it, and the clients' that build it.
    name: ClassVar[str]
    #: How it travels over HTTP; None: it has no route of its own (``wait_for`` is a
    #: state read over HTTP).
    route: ClassVar[Route | None]
    #: What it returns.
    result: ClassVar[type[Any] | None]


@lru_cache(maxsize=256)  # read per request by the HTTP clients; the routes are few
def _path_fields(path: str) -> tuple[str, ...]:
    return tuple(re.findall(r"\{(\w+)\}", path))
