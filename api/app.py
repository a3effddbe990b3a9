"""The ASGI application: Starlette routing, msgspec bodies, one JSON error shape.

Starlette with msgspec encoding and decoding by hand measured about 1.5x the requests
per second of Litestar on the same endpoints here (docs/benchmarks.md), and leaves the
error answers entirely ours; the OpenAPI document is built in :mod:`threadfold.api.openapi`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import msgspec
import redis
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from threadfold.api import metrics as prom
from threadfold.api.auth import Authenticator
from threadfold.api.errors import from_decode, from_msgspec
from threadfold.api.feed import HUB_CLIENT_NAME, get_events, make_hub
from threadfold.api.fragments import JsonFragments
from threadfold.api.hot import HOT, HotApp
from threadfold.api.openapi import document
from threadfold.api.pipeline import summary
from threadfold.api.settings import ApiSettings
from threadfold.core.depth import path_text, too_deep_json
from threadfold.core.errors import (
    BadRequest,
    InvalidInput,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    RequestError,
    ServerError,
    Unavailable,
    UnsupportedMediaType,
)
from threadfold.workers.feed.hub import Hub
from threadfold.workers.metrics import LATENCY_BUCKETS_MS, FlushOutage, Metrics
from threadfold.workers.threads import operations as ops
from threadfold.workers.threads import query, routes
from threadfold.workers.threads.checkpoint_ops import CheckpointOp
from threadfold.workers.threads.service import AsyncThreads, refusals
from threadfold.workers.wiring import AsyncEngine, AsyncWaker, open_athreads

log = logging.getLogger("threadfold.api")
T = TypeVar("T")
Handler = Callable[[Request], Awaitable[Response]]
_ENCODER = msgspec.json.Encoder()
#: The page at /ui: static files shipped in the package (package data), no build step.
UI_DIR = Path(__file__).with_name("ui")


@dataclass
class Resources:
    """What a running API process holds: the thread service and its engine, the JSON
    cache, the keys, metrics."""

    settings: ApiSettings
    engine: AsyncEngine
    auth: Authenticator
    metrics: Metrics
    fragments: JsonFragments | None
    flush_outage: FlushOutage = field(default_factory=lambda: FlushOutage(log))
    #: The process's one reader of thread feeds (GET /threads/{id}/events).
    hub: Hub | None = None

    @property
    def threads(self) -> AsyncThreads:
        return self.engine.threads

    @property
    def limits(self) -> query.Limits:
        """What one request may ask (the thread service holds them)."""
        return self.engine.threads.limits


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(_ENCODER.encode(body), status, headers, media_type="application/json")


def error_response(exc: RequestError) -> Response:
    return json_response(exc.body(), exc.status or 500, exc.headers() or None)


async def read_body(
    request: Request, settings: ApiSettings, kind: type[T], outer: int, limit: int | None = None
) -> T:
    """The JSON body as ``kind``: 415, 413, 400 and 422 each say exactly what is wrong.

    ``outer`` is how deep ``kind`` holds its messages (levels above a message), for the
    error of a body nested too deeply to decode; ``limit`` its largest size (default
    ``max_body_bytes``).
    """
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as application/json, not {media or 'nothing'}")
    limit = settings.max_body_bytes if limit is None else limit
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body is {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(f"the body is over the limit of {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:
        # The client went away, or the server cut it for sending too slowly (threadfold.api.guard):
        # nobody reads this answer, but it is counted, and nothing is appended.
        raise BadRequest("the connection closed before the whole body arrived") from None
    body = b"".join(chunks)
    try:
        return msgspec.json.decode(body, type=kind)
    except msgspec.ValidationError as exc:
        raise from_msgspec(exc, body) from exc
    except msgspec.DecodeError as exc:
        raise from_decode(exc, body) from exc
    except RecursionError:
        # msgspec recurses per level and gives up near the interpreter's limit (~1,000
        # levels): far past the depth limit, which the producer applies to what decodes.
        raise _too_deep(body, settings.max_json_depth, outer) from None


def _too_deep(body: bytes, limit: int, outer: int) -> InvalidInput:
    """The error of a body too deep to decode, at the first place it is deeper than
    ``limit`` (the rare, failing path: it reads the body again, in Python)."""
    steps = too_deep_json(body, limit, outer)
    reason = f"nested deeper than {limit} levels"
    if steps is None:
        return InvalidInput(f"the body is {reason}")
    field = path_text("", steps)
    return InvalidInput(f"{field}: {reason}", field=field)


#: The routes' names in the metrics (``http_requests{route=...}``), kept as dashboards
#: know them.
_ROUTE_NAMES: Final = {
    "append": "post_delta",
    "append_many": "post_bulk",
    "state": "get_state",
    "context": "get_context",
    "status": "get_status",
    "threads": "get_threads",
    "delete": "delete_thread",
    "update": "patch_thread",
    "search": "post_search",
    "count": "post_count",
    "copy": "post_copy",
    "prune": "post_prune",
}


#: The routes that declare query parameters, and check them themselves: the table's
#: operations that take a query string (:func:`routes.from_query`), the event stream and
#: /pipeline; every other route declares none.
QUERIED: Final = frozenset(
    {
        _ROUTE_NAMES.get(op.name, op.name)
        for op in ops.OPERATIONS
        if op.route is not None and any(p.where == "query" for p in routes.params(op))
    }
    | {"get_events", "pipeline"}
)


def _route(name: str, handler: Handler) -> Handler:
    """Wrap a handler: errors become JSON answers, and every answer is counted. A route
    that declares no query refuses any (400 naming it), before anything is done."""
    queried = name in QUERIED

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        try:
            if not queried and request.scope["query_string"]:
                query.pairs(request.query_params.multi_items(), ())
            with refusals:  # a route's own read of Redis (/metrics, /readyz) too
                response = await handler(request)
        except RequestError as exc:
            response = error_response(exc)
        except Exception:
            log.exception("unexpected error on %s", name)
            response = error_response(ServerError("internal error; it has been logged"))
        resources: Resources = request.app.state.resources
        resources.metrics.add(f"http_requests|route={name}|status={response.status_code}")
        elapsed = (time.perf_counter() - started) * 1000
        resources.metrics.observe(f"http_request_ms|route={name}", elapsed, LATENCY_BUCKETS_MS)
        return response

    return endpoint


def _resources(request: Request) -> Resources:
    resources: Resources = request.app.state.resources
    return resources


def _operation(op: type[ops.Op[Any]]) -> Handler:
    """The route of a thread operation, derived from its entry in the table: the key's
    tenant, the arguments (the path's, then the query string's or the body's: anything
    the operation does not declare is refused), the service's run, the answer."""
    route = op.route
    assert route is not None
    outer = _BODY_DEPTH.get(op.name, 3)
    body = routes.body_type(op) if route.body is not None else None
    counted = op.name in _INGESTS
    # A checkpoint carries a channel's whole value (an add_messages conversation at each
    # step): its own, larger limit.
    checkpoint = issubclass(op, CheckpointOp)

    async def handler(request: Request) -> Response:
        res = _resources(request)
        tenant = res.auth.tenant(request.headers.get("authorization"))
        if body is None:
            asked = routes.from_query(op, request.path_params, request.query_params.multi_items())
        else:  # no query string: _route refused one
            limit = res.settings.max_checkpoint_body_bytes if checkpoint else None
            decoded = await read_body(request, res.settings, body, outer=outer, limit=limit)
            asked = routes.from_body(op, request.path_params, decoded)
        fast = _FAST.get(op.name)
        if fast is not None:
            fragment = await fast(res, tenant, asked)
            if fragment is not None:
                return fragment
        result = await res.threads.run(tenant, asked)
        if counted:
            res.metrics.add("deltas_ingested", len(result) if isinstance(result, list) else 1)
        if route.answer is None:
            return Response(status_code=route.status)
        if isinstance(asked, ops.AppendMany):
            result = ops.BulkAccepted(result)
        return json_response(result, route.status)

    return handler


#: How deep each body holds its messages (levels above a message), for the error of a
#: body nested too deeply to decode: {"messages": [...]}, {"deltas": [{"messages": [...]}]}.
_BODY_DEPTH: Final = {"append": 2, "append_many": 4}
#: The operations that append deltas (the deltas_ingested counter).
_INGESTS: Final = frozenset({"append", "append_many"})


async def _state_fragments(res: Resources, tenant: str, asked: ops.Op[Any]) -> Response | None:
    """A live LangChain-form state read, answered from the JSON cache
    (:mod:`threadfold.api.fragments`): its messages as stored, encoded once per version."""
    if res.fragments is None:
        return None
    assert isinstance(asked, ops.ReadState)
    found = await res.threads.state_bodies(tenant, asked)
    if found is None:
        return None
    return json_response(res.fragments.state(asked.thread_id, found))


#: Route hints: the operations whose HTTP answer has a faster path than the service's
#: result encoded.
_FAST: Final[dict[str, Callable[[Resources, str, ops.Op[Any]], Awaitable[Response | None]]]] = {
    "state": _state_fragments
}


async def healthz(request: Request) -> Response:
    return json_response({"ok": True})


async def readyz(request: Request) -> Response:
    """Ready when Redis and the broker answer, and Redis can keep what it is given: room
    for the largest request under maxmemory (else writes are refused) and no evicting
    policy (acknowledged deltas could vanish; a policy set at run time is caught here,
    the start refuses it)."""
    res = _resources(request)
    reasons: list[tuple[str, str]] = []
    try:
        reasons += await res.engine.readiness(headroom=res.settings.max_body_bytes)
    except (redis.ConnectionError, redis.TimeoutError):
        reasons.append(("redis_unreachable", "redis unreachable"))
    if not await asyncio.to_thread(res.engine.broker_ready):
        reasons.append(("broker_unreachable", "broker unreachable"))
    if reasons:
        message = "not ready: " + "; ".join(text for _, text in reasons)
        raise Unavailable(message, details={"reasons": [code for code, _ in reasons]})
    return json_response({"ok": True, "redis": True, "broker": True})


async def get_metrics(request: Request) -> Response:
    """The fleet's totals for Prometheus: behind a key, as /pipeline's (the same
    totals) and every route but the probes and the document; a scrape sends it as a
    bearer token."""
    res = _resources(request)
    res.auth.tenant(request.headers.get("authorization"))
    totals, live = await _fleet(res)
    return Response(prom.render(totals, live), media_type=prom.CONTENT_TYPE)


async def get_pipeline(request: Request) -> Response:
    """/metrics' totals as JSON for the page (:mod:`threadfold.api.pipeline`); fleet-wide,
    but behind a key like every route the page reads; it takes no query, as no route
    takes one it does not know."""
    res = _resources(request)
    res.auth.tenant(request.headers.get("authorization"))
    query.pairs(request.query_params.multi_items(), ())
    return json_response(summary(*await _fleet(res)))


async def _fleet(res: Resources) -> tuple[dict[str, float], dict[str, float]]:
    return await res.engine.fleet(res.metrics, res.settings.metrics_liveness_seconds)


async def get_openapi(request: Request) -> Response:
    return json_response(request.app.state.openapi)


#: The thread operations' routes come from the table (:mod:`..operations`); these are
#: the process's own: the event stream, the probes, the metrics, the document.
ROUTES = [
    *(
        (op.route.path, _ROUTE_NAMES.get(op.name, op.name), _operation(op), [op.route.method])
        for op in ops.OPERATIONS
        if op.route is not None
    ),
    ("/threads/{thread_id}/events", "get_events", get_events, ["GET"]),
    ("/healthz", "healthz", healthz, ["GET"]),
    ("/readyz", "readyz", readyz, ["GET"]),
    ("/metrics", "metrics", get_metrics, ["GET"]),
    ("/pipeline", "pipeline", get_pipeline, ["GET"]),
    ("/openapi.json", "openapi", get_openapi, ["GET"]),
]


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 answers, in our error shape."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(NotFound(f"no route for {request.method} {request.url.path}"))
    if exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "")
        error: RequestError = MethodNotAllowed(
            f"{request.method} is not allowed on {request.url.path}; use {allowed}"
        )
    else:
        error = RequestError(str(exc.detail), status=exc.status_code, code="http_error")
    return json_response(error.body(), exc.status_code, dict(exc.headers or {}) or None)


def build_resources(settings: ApiSettings, waker: AsyncWaker | None = None) -> Resources:
    """The thread service, its clients and metrics for ``settings`` (the process edge
    calls it; a test may give the waker)."""
    limits = query.Limits(
        max_wait=settings.max_wait_seconds,
        max_page=settings.max_page,
        max_messages=settings.max_messages_per_delta,
        max_deltas=settings.max_deltas_per_request,
    )
    counters = Metrics(settings.keyspace, "api", settings.metrics_flush_seconds)
    engine = open_athreads(
        settings,
        wakes=waker,
        wake_window=settings.wake_window_ms / 1000,
        name=None,
        limits=limits,
        hub_name=HUB_CLIENT_NAME,
        queue_events=settings.sse_queue_events,
        with_broker=True,
        metrics=counters,
    )
    cache = settings.json_cache_mb * 1024 * 1024
    return Resources(
        settings,
        engine,
        Authenticator(settings.key_map()),
        counters,
        JsonFragments(cache) if cache > 0 else None,
        hub=make_hub(engine.threads, settings.sse_max_subscribers),
    )


async def _flush_metrics(resources: Resources) -> None:
    while True:
        await asyncio.sleep(resources.metrics.every)
        try:
            await resources.metrics.aflush(resources.engine.redis)
        # Metrics never take the API down; a failure is logged once per outage, not
        # once a second (a bug's with its traceback).
        except Exception as exc:  # noqa: BLE001
            resources.flush_outage.failed(exc)
        else:
            resources.flush_outage.flushed()


def create_app(settings: ApiSettings, resources: Resources | None = None) -> Starlette:
    """The application; ``resources`` default to ones built from ``settings`` at startup."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        res = resources or build_resources(settings)
        await res.engine.refuse_an_evicting_redis("threadfold api", log)
        app.state.resources = res
        # Everything built so far lives as long as the process: keep the collector off
        # it, and collect young objects less often (the collector measured 10-19% of an
        # API process under load, walking objects that never die).
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        flusher = asyncio.create_task(_flush_metrics(res))
        try:
            yield
        finally:
            flusher.cancel()
            with contextlib.suppress(Exception):
                await res.metrics.aclose(res.engine.redis)
            await res.engine.close()  # the hub, the pending wake-ups, the connections

    routes: list[Route | Mount] = [
        Route(path, _route(name, fn), methods=methods, name=name)
        for path, name, fn, methods in ROUTES
    ]
    # /ui answers with a redirect to /ui/ (Starlette's trailing slash), then index.html.
    routes.append(Mount("/ui", app=StaticFiles(directory=UI_DIR, html=True), name="ui"))
    app = HotApp(
        routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error}
    )
    app.serve_directly(HOT)  # the one-delta POST and the state read (threadfold.api.hot)
    app.state.openapi = document(auth=settings.api_keys is not None)
    return app
