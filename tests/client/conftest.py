"""The real stack the client tests run against, shared by the session (one per xdist
worker): a redis-server, a Celery worker process and an API process with an API key.
Tests keep apart by thread ids of their own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.client.kinds import KINDS, TOKEN, open_client
from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api, start_worker
from threadfold import ClientProtocol
from threadfold.workers.settings import Settings


@dataclass(frozen=True)
class Stack:
    redis: RedisServer
    settings: Settings
    api_url: str


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    logs = tmp_path_factory.mktemp("client-stack")
    with RedisServer() as server:
        settings = make_settings(server.url)
        api, url = start_api(settings, logs, THREADFOLD_API_KEYS=json.dumps({TOKEN: None}))
        worker = start_worker(settings, "clients", logs)
        try:
            yield Stack(server, settings, url)
        finally:
            api.kill()
            worker.kill()


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """The event loop the asyncio clients of a test run on."""
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def client(kind: str, stack: Stack, runner: asyncio.Runner) -> Iterator[ClientProtocol]:
    """Each kind of client in turn, closed after the test."""
    opened = open_client(kind, stack.settings, stack.api_url, runner)
    try:
        yield opened
    finally:
        opened.close()
