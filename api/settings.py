"""The API process's settings: the shared ones plus HTTP limits and API keys."""

from __future__ import annotations

import json

from pydantic import Field, SecretStr, field_validator

from threadfold.core.keys import DEFAULT_TENANT, check_name
from threadfold.workers.settings import Settings


class ApiSettings(Settings):
    """``THREADFOLD_*`` settings of the HTTP API."""

    host: str = Field("127.0.0.1", description="Address the API listens on.")
    port: int = Field(8000, ge=0, le=65535, description="Port the API listens on.")
    api_workers: int = Field(1, ge=1, le=64, description="API processes (uvicorn workers).")
    api_keys: SecretStr | None = Field(
        None,
        description='Bearer tokens as JSON: {"<token>": "<tenant or null>"}. Unset: no auth, '
        "one default tenant.",
    )
    max_body_bytes: int = Field(1_048_576, ge=1024, description="Largest request body (413 above).")
    max_checkpoint_body_bytes: int = Field(
        33_554_432,
        ge=1024,
        description="Largest body of a LangGraph checkpointer's request (ThreadfoldSaver "
        "over HTTP: a checkpoint carries a channel's whole value; 413 above).",
    )
    max_header_bytes: int = Field(
        16_384,
        ge=1024,
        le=1_048_576,
        description="Largest request head: the request line and the headers (431 above).",
    )
    max_headers: int = Field(100, ge=8, le=10_000, description="Most headers in a request (431).")
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="A request's head must arrive within this long of its first byte (of "
        "the connection, for a connection's first request): 408 and closed otherwise.",
    )
    body_timeout_seconds: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="A request's body must arrive within this long of its head, time the "
        "server holds it back not counted: 408 and closed otherwise.",
    )
    keep_alive_seconds: float = Field(
        65.0,
        gt=0,
        le=3600,
        description="An idle keep-alive connection is closed after this long. Longer than "
        "the idle expiry of the clients and proxies in front (httpx 5 s, a load balancer's "
        "60 s): a server that closes first races the client's next request, which then "
        "fails with no answer.",
    )
    max_messages_per_delta: int = Field(1000, ge=1, description="Most messages in one delta.")
    max_deltas_per_request: int = Field(10_000, ge=1, description="Most deltas in one bulk call.")
    max_wait_seconds: float = Field(30.0, ge=0, description="Longest read-your-writes wait.")
    max_page: int = Field(10_000, ge=1, description="Largest ?limit of a state page.")
    wake_window_ms: float = Field(
        5.0,
        ge=0,
        le=1000,
        description="Wake-ups of concurrent requests are published together after this "
        "long (fewer, fuller Celery tasks; adds at most this to visibility, or 20 ms "
        "under a steady stream, when publishes are spaced).",
    )
    json_cache_mb: int = Field(
        32, ge=0, description="Memory per API process for stored messages' JSON (0: off)."
    )

    sse_heartbeat_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="A comment line is sent on a thread's event stream (GET "
        "/threads/{id}/events) after this long without an event, so that proxies and "
        "clients see the stream alive.",
    )
    sse_queue_events: int = Field(
        1000,
        ge=1,
        description="Events queued per event-stream subscriber; one that falls further "
        "behind is dropped with an error event (too_slow) and resumes with Last-Event-ID.",
    )
    sse_max_subscribers: int = Field(
        10_000,
        ge=0,
        description="Event-stream subscribers per API process; above it, 503 "
        "too_many_subscribers with Retry-After.",
    )

    @field_validator("api_keys")
    @classmethod
    def _keys_are_a_token_map(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            parse_keys(value.get_secret_value())
        return value

    def key_map(self) -> dict[str, str] | None:
        """token -> tenant, or None when auth is off."""
        if self.api_keys is None:
            return None
        return parse_keys(self.api_keys.get_secret_value())

    @property
    def secrets(self) -> list[str]:
        """The URLs' passwords and the API keys: no output may show them."""
        return [*super().secrets, *(self.key_map() or {})]


def parse_keys(text: str) -> dict[str, str]:
    raw = json.loads(text)
    if not isinstance(raw, dict) or not raw:
        raise ValueError("api_keys must be a non-empty JSON object of token -> tenant")
    keys: dict[str, str] = {}
    for token, tenant in raw.items():
        if not isinstance(token, str) or len(token) < 16:
            raise ValueError("every API key must be a string of at least 16 characters")
        keys[token] = DEFAULT_TENANT if tenant is None else check_name(tenant, "tenant")
    return keys


def markdown_table() -> str:
    """The table of docs/configuration.md, generated from the settings themselves."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, info in ApiSettings.model_fields.items():
        default = info.default
        if isinstance(default, SecretStr):
            default = default.get_secret_value()
        shown = "" if default is None else f"`{default}`"
        text = (info.description or "").replace("|", "\\|")
        rows.append(f"| `THREADFOLD_{name.upper()}` | {shown} | {text} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
