"""The rules every route applies to its query string: names it does not take and names
given twice are refused, not guessed at; versions and formats are checked one way."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Literal

from threadfold.api.errors import BadRequest
from threadfold.core.depth import path_text
from threadfold.core.versions import InvalidVersion, parse_version

Format = Literal["langchain", "openai"]


def pairs(items: Iterable[tuple[str, str]], allowed: Collection[str]) -> dict[str, str]:
    """The query's name-value pairs (in order, as the request has them) as one mapping."""
    query: dict[str, str] = {}
    for name, value in items:
        if name not in allowed:
            field = path_text("", [name])
            raise BadRequest(f"{field}: unknown query parameter", field=field)
        if name in query:
            raise BadRequest(f"{name}: given more than once", field=name)
        query[name] = value
    return query


def version(value: str | None, name: str) -> str | None:
    """A stream id as Redis takes it (ASCII digits, each part within 64 bits), made
    canonical so that no leading zeros reach Redis; None when not given."""
    if value is None:
        return None
    try:
        ms, seq = parse_version(value)
    except InvalidVersion as exc:
        raise BadRequest(f"{name}: {exc}", field=name) from exc
    return f"{ms}-{seq}"


def format_of(value: str | None) -> Format:
    """The message form asked for (LangChain's by default)."""
    match value:
        case None | "langchain":
            return "langchain"
        case "openai":
            return "openai"
        case _:
            raise BadRequest("format: expected 'langchain' or 'openai'", field="format")
