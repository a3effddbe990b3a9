"""An in-process API over a real redis-server, for the HTTP contract tests."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from starlette.testclient import TestClient

from tests.workers.harness import FAST
from threadfold.api.app import build_resources, create_app
from threadfold.api.settings import ApiSettings


class Recorder:
    """Wake-ups are recorded, not sent: these tests drive the drain themselves."""

    def __init__(self) -> None:
        self.refs: list[str] = []

    async def wake(self, refs: Sequence[str]) -> None:
        self.refs.extend(refs)


def api_settings(redis_url: str, **overrides: Any) -> ApiSettings:
    return ApiSettings(**{**FAST, "redis_url": redis_url, **overrides})


@contextmanager
def api_client(settings: ApiSettings) -> Iterator[TestClient]:
    resources = build_resources(settings, waker=Recorder())
    with TestClient(create_app(settings, resources), raise_server_exceptions=False) as client:
        yield client
