"""Schemathesis fuzzes every operation from the API's own OpenAPI document: no 5xx, ever.

The schema is the one the app serves (built without a server); the requests go to a
real API process on a private redis-server.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from tests.infra.redis_server import RedisServer
from tests.workers.harness import make_settings, start_api
from threadfold.api.openapi import document

# Both valid and invalid (negative) requests, so the error paths are fuzzed too.
_CONFIG = SchemathesisConfig.from_dict({"generation": {"mode": "all"}})
# The event stream is left out: an accepted request streams until the client leaves
# (tests/api/test_events.py checks its refusals and its stream).
schema = schemathesis.openapi.from_dict(document(auth=False), config=_CONFIG).exclude(
    path="/threads/{thread_id}/events"
)
# schemathesis expands one test into an item per operation only outside pytest-xdist
# (under xdist just the first operation runs), so this module runs on its own.
pytestmark = pytest.mark.serial


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("fuzz")
    with RedisServer() as server:
        api, url = start_api(
            make_settings(server.url),
            tmp,
            THREADFOLD_MAX_BODY_BYTES="65536",
            THREADFOLD_MAX_WAIT_SECONDS="0.5",
        )
        try:
            yield url
        finally:
            api.kill()
        log = Path(tmp / "api.log").read_text()
        assert "Traceback" not in log, log[-3000:]


@schema.parametrize()
@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_request_the_schema_allows_or_nearly_allows_gets_a_server_error(
    case: Any, base_url: str
) -> None:
    response = case.call(base_url=base_url, timeout=30)
    described = (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:500]}"
    )
    assert response.status_code < 500, described
    documented = case.operation.definition.raw["responses"]
    assert str(response.status_code) in documented or response.status_code in (404, 405), described
    media = (response.headers.get("content-type") or [""])[0]
    assert response.status_code == 204 or media.startswith(("application/json", "text/plain")), (
        described
    )
