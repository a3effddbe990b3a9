"""The hot routes answered without Starlette's middleware stack.

A request through Starlette passes its error middleware, its exception middleware, the
router and ``request_response`` (each a coroutine and a wrapped ``send``) before the
route's endpoint runs: about 14 µs of the API's CPU a request here, measured on
``/healthz`` in process, a tenth of a one-message POST. The routes this module
serves directly (the one-delta POST and the state read, named in :data:`HOT`) are
endpoints that answer every error themselves (``threadfold.api.app._route`` turns
any exception into a JSON answer), so those layers never act on them.

The route is chosen exactly as Starlette's router chooses it: the app's routes are
matched in order with their own ``matches``, up to the last hot one; the first full
match is taken, and unless it is a hot route the request goes through Starlette as
before (as does every request an app with middleware of its own receives). The
request's scope is what the router would have made it (``app``, ``router``,
``route``, the endpoint and the path's parameters).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Receive, Scope, Send

#: The routes answered directly, by name (``threadfold.api.app.ROUTES``' names).
HOT: Final = frozenset({"post_delta", "get_state"})


class HotApp(Starlette):
    """A Starlette app that answers :data:`HOT`'s routes without its middleware."""

    #: The routes up to the last hot one, in order, each with whether it is hot.
    _hot: tuple[tuple[BaseRoute, bool], ...] = ()

    def serve_directly(self, names: Iterable[str]) -> None:
        """Answer the routes named ``names`` directly (call once the routes are set)."""
        wanted = set(names)
        marked = [(r, isinstance(r, Route) and r.name in wanted) for r in self.router.routes]
        last = max((i for i, (_, hot) in enumerate(marked) if hot), default=-1)
        self._hot = tuple(marked[: last + 1])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.user_middleware:
            for route, hot in self._hot:
                match, child = route.matches(scope)
                if match is Match.FULL:
                    if hot:
                        await self._direct(route, child, scope, receive, send)
                        return
                    break
        await super().__call__(scope, receive, send)

    async def _direct(
        self, route: Any, child: Scope, scope: Scope, receive: Receive, send: Send
    ) -> None:
        scope["app"] = self
        if "router" not in scope:
            scope["router"] = self.router
        scope["route"] = route
        scope.update(child)
        response = await route.endpoint(Request(scope, receive, send))
        await response(scope, receive, send)
