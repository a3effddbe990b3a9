"""The HTTP API's requests and answers, without I/O: what the sync and the asyncio HTTP
clients send for each call, and how they read what comes back.

Every append carries a ``delta_id`` (one is made when the caller gave none), so that
sending it again after a lost answer is applied once: the API answers a retried
``delta_id`` with the first attempt's version and ids.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar
from urllib.parse import quote

import msgspec

from threadfold import args
from threadfold.core.dump import dump_message
from threadfold.core.ids import uuid4_str
from threadfold.core.messages import BaseMessage
from threadfold.core.results import ThreadCount
from threadfold.errors import InvalidInput, RequestError, ServerError, from_answer
from threadfold.types import (
    Appended,
    Context,
    Copied,
    DeltaLike,
    Pruned,
    Searched,
    State,
    Status,
)
from threadfold.workers.threads import query

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Exchange(Generic[T]):
    """One call: its request, how a success is read, and whether a 404 to a retry of it
    is the success of an attempt whose answer was lost (a DELETE)."""

    method: str
    path: str
    read: Callable[[bytes], T]
    params: dict[str, str] | None = None
    body: bytes | None = None
    wait: float = 0.0  # seconds the server may hold the answer (read-your-writes)
    gone_is_done: bool = False


class _Bulk(msgspec.Struct):
    results: list[Appended]


_ENCODER = msgspec.json.Encoder()
_APPENDED = msgspec.json.Decoder(Appended)
_BULK = msgspec.json.Decoder(_Bulk)
_STATE = msgspec.json.Decoder(State)
_CONTEXT = msgspec.json.Decoder(Context)
_STATUS = msgspec.json.Decoder(Status)
_SEARCHED = msgspec.json.Decoder(Searched)
_COUNT = msgspec.json.Decoder(ThreadCount)
_COPIED = msgspec.json.Decoder(Copied)
_PRUNED = msgspec.json.Decoder(Pruned)


def thread_path(thread_id: str, tail: str = "") -> str:
    return f"/threads/{quote(query.thread_id(thread_id), safe='')}{tail}"


# An AI message's fields that the API's dict form (LangChain's) does not take back as
# fields: given in a dict, they land in additional_kwargs. Left out at their defaults,
# the message arrives as it was (docs/clients.md: what JSON cannot carry).
_AI_DEFAULTS: Final[tuple[tuple[str, object], ...]] = (
    ("invalid_tool_calls", []),
    ("usage_metadata", None),
)


def message_json(item: Any) -> Any:
    """A message-like as JSON can carry it: a message object in LangChain's flat dict form
    (what the API reads back into the same message), anything else as it is."""
    if isinstance(item, BaseMessage):
        dumped = dump_message(item)
    elif isinstance(getattr(item, "type", None), str) and callable(
        getattr(item, "model_dump", None)
    ):  # a LangChain message (as core recognises one)
        dumped = item.model_dump()
    else:
        return item
    if dumped.get("type") == "ai":
        for key, default in _AI_DEFAULTS:
            if key in dumped and dumped[key] == default:
                del dumped[key]
    return dumped


def _messages(messages: Sequence[Any]) -> Any:
    if isinstance(messages, list | tuple):
        return [message_json(m) for m in messages]
    return messages  # not a list: the API names the field in its refusal


def _encode(body: Any, field: str) -> bytes:
    try:
        return _ENCODER.encode(body)
    except (TypeError, msgspec.EncodeError) as exc:
        raise InvalidInput(f"{field}: cannot be sent as JSON: {exc}", field=field) from exc


def _as_own(result: Appended, own: bool) -> Appended:
    # A delta_id this client made is seen twice only when the client sent it again
    # itself (a lost answer): to the caller that is one append, not a duplicate.
    return msgspec.structs.replace(result, duplicate=False) if own else result


def append(
    thread_id: str,
    messages: Sequence[Any],
    delta_id: str | None,
    metadata: Mapping[str, Any] | None = None,
) -> Exchange[Appended]:
    own = delta_id is None
    body = {"messages": _messages(messages), "delta_id": uuid4_str() if own else delta_id}
    if metadata is not None:
        body["metadata"] = metadata
    return Exchange(
        "POST",
        thread_path(thread_id, "/deltas"),
        lambda raw: _as_own(_decode(_APPENDED, raw), own),
        body=_encode(body, "messages"),
    )


def append_many(deltas: Iterable[DeltaLike]) -> Exchange[list[Appended]]:
    items, own = [], []
    for i, d in enumerate(args.deltas(deltas)):
        own.append(d.delta_id is None)
        item = {
            "thread_id": d.thread_id,
            "messages": _messages(d.messages),
            "delta_id": uuid4_str() if d.delta_id is None else d.delta_id,
        }
        if d.metadata is not None:
            item["metadata"] = d.metadata
        items.append(_encode(item, f"deltas[{i}].messages"))
    body = b'{"deltas":[' + b",".join(items) + b"]}"

    def read(raw: bytes) -> list[Appended]:
        results = _decode(_BULK, raw).results
        return [_as_own(r, o) for r, o in zip(results, own, strict=True)]

    return Exchange("POST", "/deltas", read, body=body)


def state(  # noqa: PLR0913  # the read's query parameters, by name, as GET /state takes them
    thread_id: str,
    *,
    format: str,
    min_version: str | None,
    wait: float | None,
    limit: int | None,
    after: str | None,
    before: str | None,
    at_version: str | None,
) -> Exchange[State]:
    given = {
        "format": format,
        "min_version": min_version,
        "wait": wait,
        "limit": limit,
        "after": after,
        "before": before,
        "at_version": at_version,
    }
    return _read(thread_path(thread_id, "/state"), lambda raw: _decode(_STATE, raw), given)


def context(  # noqa: PLR0913  # the read's query parameters, by name, as GET /context takes them
    thread_id: str,
    *,
    max_tokens: object,
    strategy: str,
    include_system: object,
    start_on: object,
    end_on: object,
    counter: str,
    format: str,
    min_version: str | None,
    wait: float | None,
    at_version: str | None,
) -> Exchange[Context]:
    given = {
        "max_tokens": max_tokens,
        "strategy": strategy,
        "include_system": _flag(include_system),
        "start_on": _types(start_on),
        "end_on": _types(end_on),
        "counter": counter,
        "format": format,
        "min_version": min_version,
        "wait": wait,
        "at_version": at_version,
    }
    return _read(thread_path(thread_id, "/context"), lambda raw: _decode(_CONTEXT, raw), given)


def _read(path: str, read: Callable[[bytes], T], given: Mapping[str, object]) -> Exchange[T]:
    """A GET whose answer the server may hold for ``given["wait"]`` seconds (the parameters
    left unset are not sent)."""
    params = {k: _param(v) for k, v in given.items() if v is not None}
    # How long the server may hold the answer: a wait it will refuse holds nothing.
    wait = given.get("wait")
    held = wait if isinstance(wait, int | float) and 0 < wait < math.inf else 0.0
    return Exchange("GET", path, read, params=params, wait=float(held))


def _flag(value: object) -> object:
    """A boolean as the query string says it (anything else is sent for the API to refuse,
    naming the parameter)."""
    if value is True or value is False:
        return "true" if value else "false"
    return value


def _types(value: object) -> object:
    """Message types, comma-separated (a single type as it is)."""
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return value


def _param(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def status(thread_id: str) -> Exchange[Status]:
    return Exchange("GET", thread_path(thread_id, "/status"), lambda raw: _decode(_STATUS, raw))


def delete(thread_id: str) -> Exchange[None]:
    return Exchange("DELETE", thread_path(thread_id), lambda raw: None, gone_is_done=True)


def wait_for(thread_id: str, version: str, timeout: float) -> Exchange[str]:
    wanted, seconds = query.version(version), query.timeout(timeout)
    params = {"min_version": wanted, "wait": _param(seconds), "limit": "0"}
    return Exchange(
        "GET",
        thread_path(thread_id, "/state"),
        lambda raw: _decode(_STATE, raw).version,
        params=params,
        wait=seconds,
    )


def update(
    thread_id: str, metadata: object, ttl_seconds: object, pinned: object
) -> Exchange[Status]:
    """PATCH: only the fields given (UNSET is left out; None is sent: the default)."""
    fields = {"metadata": metadata, "ttl_seconds": ttl_seconds, "pinned": pinned}
    body = {k: v for k, v in fields.items() if v is not msgspec.UNSET}
    return Exchange(
        "PATCH",
        thread_path(thread_id),
        lambda raw: _decode(_STATUS, raw),
        body=_encode(body, "metadata"),
    )


def search(body: Mapping[str, Any]) -> Exchange[Searched]:
    return Exchange(
        "POST",
        "/threads/search",
        lambda raw: _decode(_SEARCHED, raw),
        body=_encode(_present(body), "metadata"),
    )


def count(body: Mapping[str, Any]) -> Exchange[int]:
    return Exchange(
        "POST",
        "/threads/count",
        lambda raw: _decode(_COUNT, raw).count,
        body=_encode(_present(body), "metadata"),
    )


def copy(
    thread_id: str, to: str, at_version: str | None, metadata: Mapping[str, Any] | None
) -> Exchange[Copied]:
    """A copy carries a ``delta_id`` of its own, as an append does: its retry after a
    lost answer is answered with the copy it made, not a 409."""
    body = _present({"to": to, "at_version": at_version, "metadata": metadata})
    body["delta_id"] = uuid4_str()
    return Exchange(
        "POST",
        thread_path(thread_id, "/copy"),
        lambda raw: _decode(_COPIED, raw),
        body=_encode(body, "metadata"),
    )


def prune(body: Mapping[str, Any]) -> Exchange[Pruned]:
    return Exchange(
        "POST",
        "/threads/prune",
        lambda raw: _decode(_PRUNED, raw),
        body=_encode(_present(body), "metadata"),
    )


def _present(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def _decode(decoder: msgspec.json.Decoder[T], raw: bytes) -> T:
    try:
        return decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ServerError(
            f"the service answered something that is not the API's: {exc}", code="bad_answer"
        ) from exc


def failure(status: int, raw: bytes, retry_after: str | None) -> RequestError:
    """The exception for an error answer (the API's JSON error, or a proxy's page)."""
    try:
        body: Any = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return from_answer(status, None, retry_after, raw.decode("utf-8", "replace"))
    return from_answer(status, body, retry_after)
