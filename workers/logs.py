"""Logging of every threadfold process: one format, every line redacted.

Redaction sits in the formatter, after the message, its arguments and any traceback
are rendered into one text: a URL or a secret can hide in any of them (an exception
message of a library, a log argument), and a filter would see them unrendered.
Celery (``worker_hijack_root_logger`` off) and uvicorn (given :func:`config` as its
``log_config``) log through the root handler installed here, so their lines are
redacted too; Celery masks the broker URL of its own banner itself.
"""

from __future__ import annotations

import logging
import logging.config
from collections.abc import Iterable
from typing import Any, Literal

from threadfold.workers.redact import Redactor

FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class RedactingFormatter(logging.Formatter):
    """A formatter whose output has URL passwords and ``secrets`` masked."""

    def __init__(
        self,
        fmt: str | None = None,
        datefmt: str | None = None,
        style: Literal["%", "{", "$"] = "%",
        validate: bool = True,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        super().__init__(fmt, datefmt, style, validate)
        self.redact = Redactor(secrets)

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


def config(level: str, secrets: Iterable[str]) -> dict[str, Any]:
    """A ``logging.config.dictConfig`` dictionary: the root logger to stderr, redacted.

    A dictionary (not a configured handler) because uvicorn pickles its ``log_config``
    into each worker process it spawns and applies it there."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "redacting": {
                "()": f"{__name__}.RedactingFormatter",
                "fmt": FORMAT,
                "secrets": list(secrets),
            }
        },
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "redacting",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"level": level, "handlers": ["stderr"]},
    }


def configure(level: str, secrets: Iterable[str]) -> None:
    """Install :func:`config` in this process."""
    logging.config.dictConfig(config(level, secrets))
