"""With API keys configured, ``/metrics`` needs a key as ``/pipeline`` does (the same
fleet-wide totals): it answered without one. Prometheus sends the key as a bearer
token (``authorization: Bearer ...``, its scrape config's ``authorization``). The
probes stay open (a kubelet sends no key), and so does the OpenAPI document, which
says which routes need one."""

from __future__ import annotations

import json

import pytest

from tests.api.client import api_client, api_settings

TOKEN = "key-metrics-0123456789abcdef"  # noqa: S105  # a test's key


@pytest.mark.parametrize("path", ["/metrics", "/pipeline"])
def test_the_fleets_totals_need_a_key_when_keys_are_set(redis_url: str, path: str) -> None:
    settings = api_settings(redis_url, key_prefix="ma", api_keys=json.dumps({TOKEN: "ta"}))
    with api_client(settings) as client:
        for headers in ({}, {"authorization": "Bearer not-a-key-0000000000"}):
            refused = client.get(path, headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"]["code"] == "unauthorized"
            assert "threadfold_" not in refused.text
        scraped = client.get(path, headers={"authorization": f"Bearer {TOKEN}"})
        assert scraped.status_code == 200, scraped.text


def test_probes_and_the_document_need_no_key_and_say_so(redis_url: str) -> None:
    settings = api_settings(redis_url, key_prefix="ma", api_keys=json.dumps({TOKEN: None}))
    with api_client(settings) as client:
        assert client.get("/healthz").status_code == 200
        assert client.get("/readyz").status_code in (200, 503)  # no broker here: not 401
        doc = client.get("/openapi.json").json()
        assert doc["security"] == [{"bearer": []}]
        paths = doc["paths"]
        assert paths["/healthz"]["get"]["security"] == []
        assert paths["/readyz"]["get"]["security"] == []
        assert "security" not in paths["/metrics"]["get"]  # the document's: a key
        assert "401" in paths["/metrics"]["get"]["responses"]


def test_without_keys_metrics_answer_anyone(redis_url: str) -> None:
    with api_client(api_settings(redis_url, key_prefix="ma")) as client:
        assert client.get("/metrics").status_code == 200
