"""The correctness check: every thread this process wrote, read back, equals the fold of
what was sent.

Writes still unanswered are settled first: re-sent with their ``delta_id`` (the API
answers a retry with the original version and ids, or stores it now; the ledger is right
either way), or, without one, the thread is counted unverifiable instead of guessed.
Then each thread is read with ``min_version`` = its last version and compared, message
by message, with the ledger's fold (:class:`threadfold.testing.Ledger`: ``apply_deltas``
over its deltas one at a time, in version order).

Plain ``urllib`` on purpose: it runs inside Locust (gevent makes it cooperative) and in
tests without Locust alike.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from threadfold.testing import Ledger, Mismatch, describe

log = logging.getLogger("threadfold.loadtests.check")
_SHOWN = 10  # differences logged in full; the summary file lists them all
_SNIPPET = 300


class Api:
    """The few calls the check makes; answers are (status, decoded JSON or error text)."""

    def __init__(self, host: str, token: str = "", timeout: float = 60.0) -> None:
        if urllib.parse.urlsplit(host).scheme not in {"http", "https"}:
            raise ValueError(f"the host must be an http(s) URL, got {host!r}")
        self.host = host.rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout

    def request(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> tuple[int, Any]:
        url = self.host + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, **({"Content-Type": "application/json"} if data else {})}
        request = urllib.request.Request(url, data, headers, method=method)  # noqa: S310  # scheme checked
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                return answer.status, _decode(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _decode(exc.read())
        except OSError as exc:  # refused, reset, timed out: no answer at all
            return 0, str(exc)

    def post_delta(
        self, thread_id: str, messages: list[Any], delta_id: str | None
    ) -> tuple[int, Any]:
        body: dict[str, Any] = {"messages": messages}
        if delta_id is not None:
            body["delta_id"] = delta_id
        return self.request("POST", f"/threads/{thread_id}/deltas", body)

    def state(self, thread_id: str, min_version: str, wait: float) -> tuple[int, Any]:
        params = {"min_version": min_version, "wait": wait}
        return self.request("GET", f"/threads/{thread_id}/state", params=params)


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


@dataclass
class CheckReport:
    threads_written: int = 0
    threads_checked: int = 0
    threads_unverifiable: int = 0
    resent: int = 0
    seconds: float = 0.0
    differences: list[Mismatch] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "difference_count": len(self.differences)}

    def write(self, path: Path, **extra: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**self.to_dict(), **extra}, indent=2) + "\n")


def settle_pending(api: Api, ledger: Ledger) -> int:
    """Resolve every unanswered write; returns how many were re-sent and answered."""
    resent = 0
    pending = ledger.pending()
    if pending:
        log.info("settling %d unanswered writes", len(pending))
    for out in pending:
        log.debug("unanswered: %s", out)
        if out.delta_id is None:
            ledger.taint(out.thread_id)
            continue
        status, body = api.post_delta(out.thread_id, out.messages, out.delta_id)
        if status == 202:
            ledger.accept(out, body["version"], body["ids"])
            resent += 1
        elif 400 <= status < 500 and status not in {408, 429}:
            ledger.abandon(out)  # refused now, so it was refused then: nothing stored
        else:
            ledger.taint(out.thread_id)
    return resent


def check_thread(api: Api, ledger: Ledger, thread_id: str, wait: float) -> Mismatch | None:
    """Read the thread at (at least) its last version and compare it with the fold."""
    last = ledger.last_version(thread_id)
    if last is None:
        return None
    status, body = api.state(thread_id, last, wait)
    if status != 200:
        kinds = {404: "missing", 409: "version not reached"}
        return Mismatch(thread_id, kinds.get(status, f"http {status}"), _snippet(body))
    try:
        expected = ledger.expected_dump(thread_id)
    except Exception as exc:  # noqa: BLE001  # one thread's broken fold must not end the check
        return Mismatch(thread_id, "fold failed", f"{type(exc).__name__}: {exc}")
    if body["has_more"]:
        return Mismatch(thread_id, "incomplete", "the full read answered has_more")
    if body["messages"] != expected:
        return Mismatch(thread_id, "state differs", describe(expected, body["messages"]))
    return None


def _snippet(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."


def check_threads(api: Api, ledger: Ledger, wait: float, concurrency: int = 8) -> CheckReport:
    """Settle, then check every thread written; differences are logged and returned."""
    started = time.monotonic()
    report = CheckReport(resent=settle_pending(api, ledger))
    written = ledger.threads()
    checkable = [t for t in written if not ledger.tainted(t)]
    with ThreadPoolExecutor(max(1, concurrency)) as pool:
        found = list(pool.map(lambda t: check_thread(api, ledger, t, wait), checkable))
    report.threads_written = len(written)
    report.threads_checked = len(checkable)
    report.threads_unverifiable = len(written) - len(checkable)
    report.differences = [d for d in found if d is not None]
    report.unverifiable = sorted(set(written) - set(checkable))
    report.seconds = round(time.monotonic() - started, 3)
    _log(report)
    return report


def _log(report: CheckReport) -> None:
    log.info(
        "correctness check: %d threads checked, %d unverifiable, %d re-sent, %d differences",
        report.threads_checked,
        report.threads_unverifiable,
        report.resent,
        len(report.differences),
    )
    for difference in report.differences[:_SHOWN]:
        log.error("thread %s: %s: %s", difference.thread_id, difference.kind, difference.detail)
