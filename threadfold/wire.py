"""The HTTP API's requests and answers, without I/O: what an HTTP client sends for an
operation of the table (:mod:`threadfold.workers.threads.operations`), derived from its
route, and how it reads what comes back.

The path's parameters go in the URL, the others in the query string (a GET) or the
JSON body, left out when they are their defaults. Every append and copy carries a
``delta_id`` (one is made when the caller gave none), so that sending it again after a
lost answer is applied once: the API answers a retried ``delta_id`` with the first
attempt's result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast
from urllib.parse import quote, urlencode

import httpcore
import httpx
import msgspec

from threadfold.core.dump import dump_message
from threadfold.core.ids import uuid4_str
from threadfold.core.messages import BaseMessage
from threadfold.core.results import Appended
from threadfold.errors import InvalidInput, RequestError, ServerError, from_answer
from threadfold.retry import RetryPolicy, retried, unreachable
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import query, routes

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


def _json_hook(item: Any) -> Any:
    dumped = message_json(item)
    if dumped is item:  # nothing JSON can carry
        raise TypeError(f"{type(item).__name__} is not JSON")
    return dumped


_ENCODER: Final = msgspec.json.Encoder(enc_hook=_json_hook)


def thread_path(thread_id: str, tail: str = "") -> str:
    return f"/threads/{quote(query.thread_id(thread_id), safe='')}{tail}"


def exchange(op: ops.Op[T]) -> Exchange[T]:
    """The request that runs ``op`` over HTTP, and how its answer is read."""
    if isinstance(op, ops.WaitFor):
        return _wait_for(op)  # type: ignore[return-value]  # WaitFor is an Op[str]
    op, own = _with_delta_ids(op)
    route = op.route
    assert route is not None
    path = route.path
    for name in route.path_fields:
        value = getattr(op, name)
        if name == "thread_id":  # checked here: an id that is not one never reaches a URL
            value = query.thread_id(value)
        path = path.replace(f"{{{name}}}", quote(str(value), safe=""))
    read = _reader(op, own)
    if route.body is not None:
        return Exchange(route.method, path, read, body=_body(op), gone_is_done=False)
    params = _params(op)
    wait = getattr(op, "wait", None)
    # How long the server may hold the answer: a wait it will refuse holds nothing.
    held = wait if isinstance(wait, int | float) and 0 < wait < math.inf else 0.0
    return Exchange(
        route.method,
        path,
        read,
        params=params,
        wait=float(held),
        gone_is_done=route.method == "DELETE",
    )


def _wait_for(op: ops.WaitFor) -> Exchange[str]:
    """``wait_for`` over HTTP: a state read of no messages, held until the version."""
    wanted, seconds = op.checked()
    read = ops.ReadState(thread_id=op.thread_id, min_version=wanted, wait=seconds, limit=0)
    state = exchange(read)
    return Exchange(
        state.method,
        state.path,
        lambda raw: state.read(raw).version,
        params=state.params,
        wait=seconds,
    )


def _with_delta_ids(op: ops.Op[T]) -> tuple[ops.Op[T], list[bool]]:
    """``op`` with a ``delta_id`` made for each append (and copy) that has none, and
    which ones this client made: a delta_id this client made is seen twice only when
    the client sent it again itself (a lost answer), which to the caller is one
    append, not a duplicate."""
    if isinstance(op, ops.AppendMany):
        own = [d.delta_id is None for d in op.deltas]
        made = [
            msgspec.structs.replace(d, delta_id=uuid4_str()) if mine else d
            for d, mine in zip(op.deltas, own, strict=True)
        ]
        return cast(ops.Op[T], msgspec.structs.replace(op, deltas=made)), own
    if isinstance(op, ops.Append | ops.Copy) and op.delta_id is None:
        return cast(ops.Op[T], msgspec.structs.replace(op, delta_id=uuid4_str())), [True]
    return op, [False]


#: A decoder per result type, made once: building one compiles its type's schema.
_DECODERS: dict[type[Any], msgspec.json.Decoder[Any]] = {}


def _reader(op: ops.Op[T], own: list[bool]) -> Callable[[bytes], T]:
    kind = type(op).result
    if kind is None:
        return lambda raw: None  # type: ignore[return-value]  # an Op[None]
    decoder = _DECODERS.get(kind) or _DECODERS.setdefault(kind, msgspec.json.Decoder(kind))
    if isinstance(op, ops.AppendMany):

        def read_bulk(raw: bytes) -> T:
            results = _decode(decoder, raw).results
            return [_as_own(r, o) for r, o in zip(results, own, strict=True)]  # type: ignore[return-value]

        return read_bulk
    if isinstance(op, ops.Append):
        return lambda raw: _as_own(_decode(decoder, raw), own[0])  # type: ignore[return-value]
    return lambda raw: _decode(decoder, raw)


def _as_own(result: Appended, own: bool) -> Appended:
    return msgspec.structs.replace(result, duplicate=False) if own else result


def _fields(op: ops.Op[Any], where: str) -> dict[str, Any]:
    """The operation's fields carried ``where`` ('query' or 'body'), those at their
    defaults left out (the API's defaults are the same table's)."""
    given = {}
    for param in routes.params(type(op)):
        if param.where != where:
            continue
        value = getattr(op, param.name)
        if value is msgspec.UNSET or (not param.required and value == param.default):
            continue
        given[param.name] = value
    return given


def _body(op: ops.Op[Any]) -> bytes:
    body = _fields(op, "body")
    try:
        return _ENCODER.encode(body)
    except (TypeError, msgspec.EncodeError) as exc:
        field = _unencodable(body, "")
        raise InvalidInput(f"{field}: cannot be sent as JSON: {exc}", field=field) from exc


def _unencodable(value: Any, path: str) -> str:
    """Where in ``value`` the first thing JSON cannot carry is (the refusal's field): a
    field of the body, a delta's field, down to a messages list."""
    if isinstance(value, Mapping) and not path:
        items: Sequence[tuple[str, Any]] = list(value.items())
    elif isinstance(value, msgspec.Struct):
        items = [(f, getattr(value, f)) for f in value.__struct_fields__]
    elif isinstance(value, list | tuple) and path.endswith("deltas"):
        items = [(f"[{i}]", v) for i, v in enumerate(value)]
    else:
        return path
    for name, item in items:
        where = f"{path}{name}" if name.startswith("[") else f"{path}.{name}".lstrip(".")
        try:
            _ENCODER.encode(item)
        except (TypeError, msgspec.EncodeError):
            return _unencodable(item, where)
    return path


def _params(op: ops.Op[Any]) -> dict[str, str]:
    given = _fields(op, "query")
    return {name: _param(value) for name, value in given.items() if value is not None}


def _param(value: object) -> str:
    """A value as the query string says it: booleans true/false, lists of message types
    comma-separated, whole numbers without a point (anything else is sent as it is, for
    the API to refuse naming the parameter)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


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


class Remote:
    """What an HTTP client holds besides its connection pool: where to go, how to
    authenticate, when to retry, and how one attempt's answer is judged."""

    def __init__(  # the HTTP clients' own arguments, passed on by name
        self,
        base_url: str,
        api_key: str | None,
        *,
        timeout: float,
        retries: int,
        backoff: float,
        max_backoff: float,
    ) -> None:
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError("base_url: expected an http:// or https:// URL with a host")
        self.base_url = base_url
        # What messages and reprs show of it: no credentials.
        self.shown_url = str(url.copy_with(username=None, password=None))
        self.policy = RetryPolicy(retries, backoff, max_backoff)
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (0 < timeout < math.inf)
        ):
            raise ValueError(f"timeout: expected a finite number of seconds > 0, got {timeout!r}")
        self.timeout = float(timeout)
        self.headers = {"accept": "application/json", "content-type": "application/json"}
        if api_key is not None:
            self.headers["authorization"] = f"Bearer {api_key}"
        # The request/response calls go through httpcore (httpx's own transport, without
        # httpx's request and response models, half the CPU a call): what httpx would
        # add, added once here.
        self.scheme, self.host, self.port = url.raw_scheme, url.raw_host, url.port
        self.prefix = url.raw_path.split(b"?")[0].rstrip(b"/")
        self.raw_headers: dict[bytes | str, bytes | str] = {
            b"host": url.netloc, b"user-agent": b"threadfold",
            **{k.encode(): v.encode() for k, v in self.headers.items()},
        }

    def target(self, exchange: Exchange[Any]) -> httpcore.URL:
        """The exchange's URL (built as httpcore's own, not parsed from a string): the
        base URL's path, the route's, the query string."""
        query_string = f"?{urlencode(exchange.params)}" if exchange.params else ""
        path = self.prefix + f"{exchange.path}{query_string}".encode()
        return httpcore.URL(scheme=self.scheme, host=self.host, port=self.port, target=path)

    def request_headers(self, exchange: Exchange[Any]) -> dict[bytes | str, bytes | str]:
        body = exchange.body or b""
        return {**self.raw_headers, b"content-length": str(len(body)).encode()}

    def timeouts(self, exchange: Exchange[Any]) -> dict[str, float]:
        """httpcore's timeouts of one attempt: a read-your-writes read may be held by the
        server for its wait."""
        t = self.timeout
        return {"connect": t, "read": t + exchange.wait, "write": t, "pool": t}

    def answer(  # an answer's parts, as the transport gives them
        self, exchange: Exchange[T], status: int, content: bytes,
        retry_after: str | None, attempt: int,
    ) -> T:
        """The call's result, or the RequestError its answer is, raised."""
        if 200 <= status < 300:
            return exchange.read(content)
        if status == 404 and attempt > 0 and exchange.gone_is_done:
            return exchange.read(b"")
        raise failure(status, content, retry_after)

    def unreachable(self, exc: Exception) -> RequestError:
        found = unreachable(exc, self.shown_url)
        if found is None:
            raise exc
        found.__cause__ = exc
        return found

    def give_up(self, failed: RequestError, attempt: int) -> bool:
        return not retried(failed) or attempt >= self.policy.retries
