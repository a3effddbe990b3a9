"""The arguments of a thread operation, checked once for every door: a thread id, a
tenant, a version, a format, a timeout, a state read's and a context read's query. The
operations of the table (:mod:`.operations`) call these on their raw arguments, whether
a direct client gave them or the HTTP API parsed them from a query string
(:mod:`.routes`). A refusal names the argument.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from threadfold.core.context import (
    COUNTERS,
    MAX_TOKENS,
    MESSAGE_TYPES,
    STRATEGIES,
    Counter,
    Strategy,
    Trim,
)
from threadfold.core.depth import path_text
from threadfold.core.errors import BadRequest, InvalidInput
from threadfold.core.keys import InvalidName, check_name
from threadfold.core.render import FORMATS, Format
from threadfold.core.versions import InvalidVersion, parse_version

#: The threads list's ``limit``: its default and its largest.
THREADS_LIMIT: Final = 50
THREADS_MAX: Final = 500

@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask: the HTTP API's (its settings); a direct client has none.
    A read's wait and page; an append's messages, a bulk's deltas."""

    max_wait: float = math.inf
    max_page: int | None = None
    max_messages: int | None = None
    max_deltas: int | None = None


NO_LIMITS: Final = Limits()


@dataclass(frozen=True, slots=True)
class Query:
    """A checked state query; ``limit`` -1 is "all", ``wait`` is in seconds."""

    format: Format = "langchain"
    min_version: str | None = None
    at_version: str | None = None
    wait: float = 0.0
    limit: int = -1
    before: str | None = None
    after: str | None = None

    @property
    def mode(self) -> str:
        """How the page is cut: 'after' or 'before' an anchor message, or 'all'."""
        if self.after:
            return "after"
        return "before" if self.before else "all"

    @property
    def anchor(self) -> str:
        return self.after or self.before or ""

    @property
    def anchor_field(self) -> str:
        return "after" if self.after else "before"


@dataclass(frozen=True, slots=True)
class ContextQuery:
    """A checked context read: the trim, and the version read as a state read's."""

    trim: Trim
    format: Format = "langchain"
    min_version: str | None = None
    at_version: str | None = None
    wait: float = 0.0


def thread_id(value: str) -> str:
    """``value`` if it is a thread id (422 on ``thread_id`` if not). The HTTP clients
    check it too, so that no id that is not one reaches a URL path (``a/b`` would reach
    another route)."""
    try:
        return check_name(value, "thread id")
    except InvalidName as exc:
        raise InvalidInput(str(exc), field="thread_id") from exc


def tenant(value: str) -> str:
    try:
        return check_name(value, "tenant")
    except InvalidName as exc:
        raise InvalidInput(str(exc), field="tenant") from exc


def version(value: str, field: str = "version") -> str:
    """``value`` as a version (``<ms>-<seq>``, ASCII digits, each part within 64 bits),
    made canonical so that no leading zeros reach Redis."""
    try:
        ms, seq = parse_version(value)
    except InvalidVersion as exc:
        raise BadRequest(f"{field}: {exc}", field=field) from exc
    return f"{ms}-{seq}"


def format_of(value: object) -> Format:
    """The message form asked for."""
    for name in FORMATS:
        if value == name:
            return name
    raise BadRequest("format: expected 'langchain' or 'openai'", field="format")


def timeout(value: object, field: str = "timeout", top: float = math.inf) -> float:
    """``value`` if it is a number of seconds from 0 to ``top``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise BadRequest(f"{field}: expected a number of seconds >= 0, got {value!r}", field=field)
    return float(_within(value, field, top))


def _within(value: float, field: str, top: float) -> float:
    if not 0 <= value <= top or value == math.inf:
        span = ">= 0" if top == math.inf else f"from 0 to {top:g}"
        raise BadRequest(f"{field}: expected a value {span}, got {value:g}", field=field)
    return value


def _limit(value: object, top: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"limit: expected an integer >= 0, got {value!r}", field="limit")
    return int(_within(value, "limit", math.inf if top is None else top))


def _anchor(value: object, name: str) -> str | None:
    """A message id: any non-empty string (ids are the callers' own, or UUIDs)."""
    if value is not None and not (isinstance(value, str) and value):
        got = "an empty string" if value == "" else repr(value)
        raise BadRequest(f"{name}: expected a message id, got {got}", field=name)
    return value


def query(  # noqa: PLR0913  # a state read's query parameters, by name, as state() takes them
    *,
    format: object = "langchain",
    min_version: str | None = None,
    at_version: str | None = None,
    wait: object = None,
    limit: object = None,
    before: object = None,
    after: object = None,
    limits: Limits = NO_LIMITS,
) -> Query:
    """The arguments of a state read, checked one by one, in the order the API checks
    its query string."""
    fmt = format_of(format)
    min_v = None if min_version is None else version(min_version, "min_version")
    at_v = None if at_version is None else version(at_version, "at_version")
    seconds = 0.0 if wait is None else timeout(wait, "wait", limits.max_wait)
    count = -1 if limit is None else _limit(limit, limits.max_page)
    first, last = _anchor(before, "before"), _anchor(after, "after")
    if first is not None and last is not None:
        raise BadRequest("before: give either before or after, not both", field="before")
    return Query(fmt, min_v, at_v, seconds, count, first, last)


def _unknown(value: object, name: str, allowed: tuple[str, ...]) -> BadRequest:
    expected = " or ".join(repr(a) for a in allowed)
    return BadRequest(f"{name}: expected {expected}, got {value!r}", field=name)


def strategy_of(value: object) -> Strategy:
    for option in STRATEGIES:
        if value == option:
            return option
    raise _unknown(value, "strategy", STRATEGIES)


def counter_of(value: object) -> Counter:
    for option in COUNTERS:
        if value == option:
            return option
    raise _unknown(value, "counter", COUNTERS)


def _types(value: object, name: str) -> tuple[str, ...]:
    """A message type or several (``start_on``/``end_on``): LangChain's type strings."""
    if value is None:
        return ()
    given = [value] if isinstance(value, str) else value
    if not isinstance(given, list | tuple) or not given:
        raise BadRequest(f"{name}: expected a message type or a list of them", field=name)
    for item in given:
        if item not in MESSAGE_TYPES:
            raise BadRequest(
                f"{name}: unknown message type {item!r}; expected one of "
                + ", ".join(MESSAGE_TYPES),
                field=name,
            )
    return tuple(given)


def token_budget(value: object) -> int:
    """A context window's budget: an integer number of tokens, 1 to MAX_TOKENS."""
    if value is None:
        raise BadRequest(
            "max_tokens: required (the window's budget, in tokens)", field="max_tokens"
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"max_tokens: expected an integer, got {value!r}", field="max_tokens")
    if not 1 <= value <= MAX_TOKENS:
        raise BadRequest(
            f"max_tokens: expected an integer from 1 to {MAX_TOKENS}, got {value}",
            field="max_tokens",
        )
    return value


def context(  # noqa: PLR0913  # trim_messages' arguments and a state read's, by name
    *,
    max_tokens: object = None,
    strategy: object = "last",
    include_system: object = False,
    start_on: object = None,
    end_on: object = None,
    counter: object = "approximate",
    format: object = "langchain",
    min_version: str | None = None,
    at_version: str | None = None,
    wait: object = None,
    limits: Limits = NO_LIMITS,
) -> ContextQuery:
    """The arguments of a context read, checked one by one.
    ``start_on`` and ``include_system`` go with ``strategy="last"`` only, as LangChain
    refuses them with ``"first"``."""
    budget = token_budget(max_tokens)
    how = strategy_of(strategy)
    if not isinstance(include_system, bool):
        raise BadRequest(
            f"include_system: expected true or false, got {include_system!r}",
            field="include_system",
        )
    first_types, last_types = _types(start_on, "start_on"), _types(end_on, "end_on")
    if how == "first" and include_system:
        raise BadRequest("include_system: only with strategy 'last'", field="include_system")
    if how == "first" and first_types:
        raise BadRequest("start_on: only with strategy 'last'", field="start_on")
    count = counter_of(counter)
    read = query(
        format=format, min_version=min_version, at_version=at_version, wait=wait, limits=limits
    )
    trim = Trim(budget, how, include_system, first_types, last_types, count)
    return ContextQuery(trim, read.format, read.min_version, read.at_version, read.wait)


# -- from a query string -------------------------------------------------------------------


def pairs(items: Iterable[tuple[str, str]], allowed: Collection[str]) -> dict[str, str]:
    """A query string's name-value pairs (in order, as the request has them) as one
    mapping: names not ``allowed`` and names given twice are refused, not guessed at."""
    found: dict[str, str] = {}
    for name, value in items:
        if name not in allowed:
            field = path_text("", [name])
            raise BadRequest(f"{field}: unknown query parameter", field=field)
        if name in found:
            raise BadRequest(f"{name}: given more than once", field=name)
        found[name] = value
    return found


def threads_limit(value: object) -> int:
    """The threads list's ``limit`` (checked as a state read's)."""
    return _limit(value, THREADS_MAX)


def events_query(
    items: Iterable[tuple[str, str]], last_event_id: str | None
) -> tuple[Format, str | None]:
    """``GET /threads/{id}/events``: the format, and the version to resume after (the
    ``after`` parameter or the ``Last-Event-ID`` header; both must agree)."""
    given = pairs(items, ("format", "after"))
    fmt = format_of(given.get("format", "langchain"))
    after = given.get("after")
    after = None if after is None else version(after, "after")
    header = None if last_event_id is None else version(last_event_id, "Last-Event-ID")
    if after is not None and header is not None and after != header:
        raise BadRequest(
            f"after: {after!r} differs from the Last-Event-ID header {header!r}; give one",
            field="after",
        )
    return fmt, after or header
