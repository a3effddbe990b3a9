"""The one settings object of a threadfold process, read from ``THREADFOLD_*`` variables.

Read once at the command-line edge and passed down; nothing below reads the
environment. URLs are secrets (they may carry passwords): hidden from repr and logs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from threadfold.core.depth import DEFAULT_MAX_DEPTH, HIGHEST_MAX_DEPTH
from threadfold.core.keys import Keyspace
from threadfold.core.lifecycle import MAX_TTL_SECONDS, MIN_TTL_SECONDS
from threadfold.workers.redact import url_secrets
from threadfold.workers.redisio import sentinel
from threadfold.workers.redisio.durable import Wait
from threadfold.workers.storage.feed_record import FeedLimits


class Settings(BaseSettings):
    """Configuration shared by producers, workers, the sweeper and the API."""

    model_config = SettingsConfigDict(env_prefix="THREADFOLD_", frozen=True, extra="ignore")

    redis_url: SecretStr = Field(
        SecretStr("redis://127.0.0.1:6379/0"),
        description="Redis holding thread state: redis://, rediss:// (TLS), a cluster node, "
        "or redis+sentinel://host:port[,host:port...]/service[/db] (Sentinel).",
    )
    broker_url: SecretStr | None = Field(
        None,
        description="Celery broker: redis://, rediss://, redis+sentinel:// or amqp://. "
        "Default: redis_url (never a cluster: kombu has no cluster transport).",
    )
    cluster: bool = Field(False, description="redis_url names a Redis Cluster node.")
    key_prefix: str = Field(
        "tf",
        pattern=r"^[A-Za-z0-9_.-]{1,32}$",
        description="Prefix of every key threadfold writes.",
    )
    buckets: int = Field(
        1024, ge=1, le=16384, description="Index buckets (fixed for the life of a deployment)."
    )
    queue: str = Field("threadfold", description="Celery queue of the wake-up tasks.")
    refs_per_task: int = Field(
        256, ge=1, le=1000, description="Most threads one wake-up task carries."
    )
    batch_size: int = Field(
        1000, ge=1, le=100_000, description="Most log entries a worker folds per commit."
    )
    drain_seconds: float = Field(
        2.0,
        gt=0,
        description="A task drains one thread at most this "
        "long, then hands the rest to a new task (fairness).",
    )
    dedupe_window_seconds: float = Field(
        3600.0, ge=0, description="How long a producer delta_id is remembered."
    )
    wake_ttl_seconds: float = Field(
        30.0,
        gt=0,
        description="Lease of the wake-up flag; a "
        "crashed drain is retried by the sweeper after it lapses.",
    )
    sweep_seconds: float = Field(5.0, gt=0, description="Sweeper (Celery beat) period.")
    retention_seconds: float = Field(
        0.0,
        ge=0,
        description="Keep applied log entries this long "
        "(for replay and time travel); 0 trims at once.",
    )
    feed_max_events: int = Field(
        100,
        ge=0,
        description="Change events kept per followed thread for subscribers that resume "
        "(Last-Event-ID); 0 keeps none (live subscribers are still served).",
    )
    feed_max_age_seconds: float = Field(
        300.0,
        ge=0,
        description="Drop a thread's change events older than this, and its whole feed "
        "this long after its last commit; 0: no age limit.",
    )
    feed_max_event_bytes: int = Field(
        32_768,
        ge=0,
        description="Keep a change event in the feed only up to this size (a larger one, "
        "a bulk load's, is only published: a subscriber that missed it gets a snapshot).",
    )
    thread_ttl_seconds: float = Field(
        0.0,
        ge=0,
        le=MAX_TTL_SECONDS,
        description="Remove a thread idle this long (no append, no commit): every key and "
        "index entry of it. 0 keeps threads forever; a thread's own TTL (PATCH "
        "ttl_seconds) overrides it, and a pinned thread never expires.",
    )
    ttl_refresh_on_read: bool = Field(
        False,
        description="Reads of a thread's state restart its TTL too, as writes always do "
        "(one more script call per read).",
    )
    expire_per_sweep: int = Field(
        10_000,
        ge=1,
        le=1_000_000,
        description="Most threads one TTL sweep removes (the rest wait for the next).",
    )
    expire_buckets_per_sweep: int = Field(
        256,
        ge=1,
        le=16384,
        description="Buckets one TTL sweep visits, round robin (no full scan per period).",
    )
    merge_chunks: bool = Field(
        False,
        description="Merge message chunks of one id with LangChain's "
        "chunk '+', folded strictly left in log order.",
    )
    ingest_commits: bool = Field(
        True,
        description="A delta to a thread with nothing waiting (new messages, edits and "
        "removals of stored ones) is committed by the ingest script itself (visible when "
        "the call returns, no worker involved); false: every delta waits for a worker.",
    )
    durability: Literal["primary", "replica"] = Field(
        "primary",
        description="When a write is answered: 'primary' once the primary Redis holds it "
        "(a failover may lose the last ones, docs/failover.md); 'replica' once WAIT "
        "confirms durability_replicas replicas hold it (not on a cluster).",
    )
    durability_replicas: int = Field(
        1, ge=1, le=16, description="With durability 'replica': replicas that must confirm."
    )
    durability_timeout_ms: int = Field(
        1000,
        ge=1,
        le=60_000,
        description="With durability 'replica': how long a write waits for its replicas "
        "before it is answered 503 not_replicated (in doubt: retry with its delta_id).",
    )
    tenant_rate: float = Field(
        0.0,
        ge=0,
        description="Deltas a second one tenant may append through one process (an API "
        "process, a direct client), on average; over it a call is refused 429 "
        "rate_limited with Retry-After. 0: no limit.",
    )
    tenant_burst: int = Field(
        2000, ge=1, description="With tenant_rate: deltas a tenant may save up ahead of it."
    )
    failure_limit: int = Field(
        5, ge=1, description="Failed drains in a row before a thread is quarantined."
    )
    max_json_depth: int = Field(
        DEFAULT_MAX_DEPTH,
        ge=8,
        le=HIGHEST_MAX_DEPTH,
        description="Deepest nesting of objects and arrays in a message (the message is "
        "level 1); a deeper one is refused (422), as a worker could fail to decode it.",
    )
    task_soft_time_limit: float = Field(60.0, gt=0, description="Celery soft time limit per task.")
    task_time_limit: float = Field(90.0, gt=0, description="Celery hard time limit per task.")
    visibility_timeout: float = Field(
        300.0, gt=0, description="Redis broker redelivery timeout; above the hard time limit."
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Log level of every process."
    )
    metrics_flush_seconds: float = Field(
        1.0,
        gt=0,
        description="Each process adds its counters to the fleet-wide totals this often "
        "(and when it exits gracefully).",
    )
    metrics_liveness_seconds: float = Field(
        60.0,
        gt=0,
        description="A process counts in threadfold_processes this long after its last "
        "metrics flush; above metrics_flush_seconds. No total depends on it.",
    )

    @model_validator(mode="after")
    def _metrics_liveness_outlasts_a_flush(self) -> Settings:
        # A live process must flush again before it is taken for gone.
        if self.metrics_liveness_seconds <= self.metrics_flush_seconds:
            raise ValueError("need metrics_flush_seconds < metrics_liveness_seconds")
        return self

    @model_validator(mode="after")
    def _sentinel_urls_are_whole(self) -> Settings:
        # Parsed here, once, so a malformed one is refused at the start naming its
        # variable (the message never quotes the URL: it may hold a password).
        for name, url in (("redis_url", self.redis_url), ("broker_url", self.broker_url)):
            try:
                found = None if url is None else sentinel.parse(url.get_secret_value())
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from None
            if found is not None and name == "redis_url" and self.cluster:
                raise ValueError("redis_url: a Sentinel URL names one primary, not a cluster")
        return self

    @model_validator(mode="after")
    def _replica_durability_has_one_primary(self) -> Settings:
        # WAIT counts the replicas of the connection's own server: a write spread over a
        # cluster's primaries would need a wait on each, which is not offered yet.
        if self.durability == "replica" and self.cluster:
            raise ValueError("durability 'replica' needs one primary, not a cluster")
        return self

    @model_validator(mode="after")
    def _ttl_is_none_or_kept(self) -> Settings:
        # The sweep runs every few seconds: a TTL under a second could not be kept.
        if 0 < self.thread_ttl_seconds < MIN_TTL_SECONDS:
            raise ValueError(f"thread_ttl_seconds is 0 (none) or at least {MIN_TTL_SECONDS}")
        return self

    @model_validator(mode="after")
    def _limits_are_ordered(self) -> Settings:
        # A drain must end before its soft limit, which must end before the hard one, which
        # must end before the broker redelivers the message to another worker.
        if not (
            self.drain_seconds
            < self.task_soft_time_limit
            < self.task_time_limit
            < self.visibility_timeout
        ):
            raise ValueError(
                "need drain_seconds < task_soft_time_limit < task_time_limit < visibility_timeout"
            )
        return self

    @property
    def keyspace(self) -> Keyspace:
        return Keyspace(self.key_prefix, self.buckets)

    @property
    def broker(self) -> str:
        """The broker URL (a secret: do not log it)."""
        return (self.broker_url or self.redis_url).get_secret_value()

    @property
    def secrets(self) -> list[str]:
        """What no output may show: the passwords in the URLs.

        Masked by :mod:`threadfold.workers.redact`.
        """
        urls = [u.get_secret_value() for u in (self.redis_url, self.broker_url) if u is not None]
        return [secret for url in urls for secret in url_secrets(url)]

    @property
    def replica_wait(self) -> Wait | None:
        """What a write waits for before it is answered: durability 'replica''s
        replicas, or nothing ('primary')."""
        if self.durability != "replica":
            return None
        return Wait(self.durability_replicas, self.durability_timeout_ms)

    @property
    def dedupe_ms(self) -> int:
        return int(self.dedupe_window_seconds * 1000)

    @property
    def wake_ttl_ms(self) -> int:
        return int(self.wake_ttl_seconds * 1000)

    @property
    def retention_ms(self) -> int:
        return int(self.retention_seconds * 1000)

    @property
    def thread_ttl_ms(self) -> int:
        return int(self.thread_ttl_seconds * 1000)

    @property
    def feed_limits(self) -> FeedLimits:
        return FeedLimits(
            self.feed_max_events,
            int(self.feed_max_age_seconds * 1000),
            self.feed_max_event_bytes,
        )
