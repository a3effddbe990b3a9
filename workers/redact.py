"""Secrets out of every output: passwords in URLs masked, known secrets replaced.

URLs carry passwords (``redis://:pw@host``, ``amqp://user:pw@host``, Sentinel and
failover lists joined by ``;``, ``?password=`` in a query: redis-py accepts it), and
they reach output through our own prints, log lines and exception messages. Two layers:

* :func:`mask` rewrites every URL in a text so its password reads ``***`` — whatever
  the URL, known or not, in a message or a traceback;
* :class:`Redactor` also replaces the process's own secrets (the passwords of its
  configured URLs, the API keys) wherever they appear as bare text.

Why not kombu's ``maybe_sanitize_url`` (which Celery's banner uses): it takes one URL,
not a text, drops the query string, and raises on a ``;``-joined Sentinel list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

from pydantic import ValidationError

MASK = "***"

# scheme://user:PASSWORD@ — the password runs to the LAST '@' of the authority (which
# ends at '/', '?', '#' or a blank), as urllib and redis-py read it, so an unescaped '@'
# or ':' in a password is masked whole.
_URL_PASSWORD = re.compile(
    r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s:@]*:)(?P<secret>[^/?#\s]*)(?=@)"
)
# ?password=... / &sentinel_password=... in a URL's query.
_QUERY_PASSWORD = re.compile(r"(?i)(?P<head>[?&;][\w.-]*password=)(?P<secret>[^&#;\s]*)")

# A bare secret shorter than this is masked inside URLs only: replacing it everywhere
# would garble ordinary words of the output (a password "redis") and protect nothing.
MIN_BARE_SECRET = 8


def mask(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}{MASK}" if m["secret"] else m[0], text)
    return _QUERY_PASSWORD.sub(lambda m: f"{m['head']}{MASK}" if m["secret"] else m[0], text)


def url_secrets(url: str) -> list[str]:
    """The passwords in ``url`` (each part of a ``;`` list, the query), as written and
    percent-decoded: either form may reach an output."""
    found: list[str] = []
    for pattern in (_URL_PASSWORD, _QUERY_PASSWORD):
        for match in pattern.finditer(url):
            if match["secret"]:
                found += [match["secret"], unquote(match["secret"])]
    return list(dict.fromkeys(found))


class Redactor:
    """Masks URL passwords in a text, then replaces each known secret by ``***``."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first: a secret that contains another is replaced whole.
        self.secrets = sorted(
            {s for s in secrets if len(s) >= MIN_BARE_SECRET}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        text = mask(text)
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text


def settings_error(exc: ValidationError) -> str:
    """What is wrong with the ``THREADFOLD_*`` settings, naming each variable, without
    the values given: pydantic's own text quotes them (a URL, the API keys)."""
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = "_".join(str(part) for part in error["loc"]).upper()
        problems.append(f"{f'THREADFOLD_{where}' if where else 'settings'}: {error['msg']}")
    return mask("; ".join(problems))
