"""Secrets masked in URLs, texts, settings errors and log lines.

The masking is :mod:`threadfold.workers.redact`; the log formatter :mod:`threadfold.workers.logs`.
"""

from __future__ import annotations

import io
import logging
import logging.config

import pytest
from pydantic import ValidationError

from threadfold.api.settings import ApiSettings
from threadfold.workers import logs
from threadfold.workers.redact import MASK, Redactor, mask, settings_error, url_secrets
from threadfold.workers.settings import Settings

PW = "s3cr3t-Pa55word"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"redis://:{PW}@host:6379/0", "redis://:***@host:6379/0"),
        (f"redis://user:{PW}@host:6379/0", "redis://user:***@host:6379/0"),
        (
            f"rediss://:{PW}@host:6380/1?ssl_cert_reqs=required",
            "rediss://:***@host:6380/1?ssl_cert_reqs=required",
        ),
        (f"amqp://guest:{PW}@rabbit:5672//", "amqp://guest:***@rabbit:5672//"),
        (
            f"sentinel://:{PW}@s1:26379;sentinel://:{PW}@s2:26379/0",
            "sentinel://:***@s1:26379;sentinel://:***@s2:26379/0",
        ),
        ("redis://:p@ss:w0rd@host/0", "redis://:***@host/0"),  # unescaped '@' and ':'
        ("redis://:p%40ss@host/0", "redis://:***@host/0"),
        (f"redis://host:6379/0?password={PW}&db=1", "redis://host:6379/0?password=***&db=1"),
        (f"unix://:{PW}@/run/redis.sock?db=0", "unix://:***@/run/redis.sock?db=0"),
        ("redis://host:6379/0", "redis://host:6379/0"),  # nothing to mask
        ("redis://alice@host:6379/0", "redis://alice@host:6379/0"),  # a user name only
        ("redis://:@host/0", "redis://:@host/0"),  # an empty password
        (
            f"consumer: Cannot connect to redis://:{PW}@10.0.0.1:6379/0: refused; "
            f"broker amqp://u:{PW}@mq//, mail bob@example.com",
            "consumer: Cannot connect to redis://:***@10.0.0.1:6379/0: refused; "
            "broker amqp://u:***@mq//, mail bob@example.com",
        ),
    ],
)
def test_mask_hides_the_password_of_every_url_form_and_keeps_the_rest(url: str, shown: str) -> None:
    assert mask(url) == shown


def test_url_secrets_are_the_passwords_as_written_and_decoded() -> None:
    url = "sentinel://:p%40ss-one@s1;sentinel://:p%40ss-one@s2/0?sentinel_password=two-2222"
    assert url_secrets(url) == ["p%40ss-one", "p@ss-one", "two-2222"]
    assert url_secrets("redis://host:6379/0") == []


def test_the_redactor_replaces_known_secrets_in_any_text_and_short_ones_only_in_urls() -> None:
    redact = Redactor([PW, "abc"])
    assert redact(f"AUTH {PW} failed") == f"AUTH {MASK} failed"
    assert redact("abc is a word; redis://:abc@h/0") == f"abc is a word; redis://:{MASK}@h/0"


def test_settings_secrets_cover_both_urls_and_the_api_keys() -> None:
    key = "k" * 16 + "-api-key"
    settings = ApiSettings(
        redis_url=f"redis://:{PW}@h/0",
        broker_url="amqp://u:other-secret@mq//",
        api_keys=f'{{"{key}": null}}',
    )
    assert set(settings.secrets) == {PW, "other-secret", key}
    assert Settings(redis_url="redis://h/0").secrets == []


def test_a_settings_error_names_the_variable_and_never_the_value() -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(redis_url=f"redis://:{PW}@h/0", drain_seconds=1000)
    assert "redis://:" in str(raised.value)  # pydantic's own text quotes the input ...
    said = settings_error(raised.value)
    assert PW not in said and "redis://" not in said  # ... ours does not
    assert said.startswith("settings: Value error, need drain_seconds < task_soft_time_limit")

    key = "TOPSECRET-key-16"
    with pytest.raises(ValidationError) as raised:
        ApiSettings(api_keys=f'{{"{key}": "bad!"}}')
    assert key in str(raised.value)
    said = settings_error(raised.value)
    assert key not in said
    assert said.startswith("THREADFOLD_API_KEYS: Value error, tenant must be")


def test_every_log_line_is_redacted_message_arguments_and_traceback() -> None:
    config = logs.config("INFO", [PW])
    config["handlers"]["stderr"]["stream"] = io.StringIO()
    logging.config.dictConfig(config)
    stream = logging.getLogger().handlers[0].stream  # type: ignore[attr-defined]
    log = logging.getLogger("threadfold.test")
    try:
        log.info("connecting to %s", f"amqp://u:{PW}@mq//")
        try:
            raise ConnectionError(f"lost redis://:{PW}@h:6379/0 (password {PW})")
        except ConnectionError:
            log.exception("drain failed")
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
    text = stream.getvalue()
    assert PW not in text
    assert "connecting to amqp://u:***@mq//" in text
    assert "ConnectionError: lost redis://:***@h:6379/0 (password ***)" in text
    assert "Traceback (most recent call last)" in text
