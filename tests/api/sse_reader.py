"""Reading ``GET /threads/{id}/events`` in tests: an httpx stream parsed into events by a
thread, so a test waits for the next event with a timeout (never for ever)."""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from threadfold.workers.feed.apply import apply, in_order


@dataclass
class Event:
    """One SSE event: ``kind`` (``snapshot``, ``change``, ``error``; ``comment`` for a
    comment line, ``retry`` for the retry field), its id, and its decoded data."""

    kind: str
    id: str | None = None
    data: Any = None
    text: str = ""


@dataclass
class Stream:
    """An open event stream; ``events`` fills as they arrive, None at its end."""

    response: httpx.Response
    events: queue.Queue[Event | None] = field(default_factory=queue.Queue)
    closing: bool = False

    def next(self, timeout: float = 15.0, skip_comments: bool = True) -> Event | None:
        """The next event within ``timeout`` seconds (heartbeats do not extend it)."""
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            if event is None or not skip_comments or event.kind not in ("comment", "retry"):
                return event


def _parse(lines: Any, out: queue.Queue[Event | None]) -> None:
    kind, ident, data = "message", None, list[str]()
    for line in lines:
        if line == "":
            if data:
                text = "\n".join(data)
                out.put(Event(kind, ident, json.loads(text), text))
            kind, ident, data = "message", None, []
        elif line.startswith(":"):
            out.put(Event("comment", text=line))
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "id":
                ident = value
            elif name == "data":
                data.append(value)
            elif name == "retry":
                out.put(Event("retry", text=value))


def open_stream(
    client: httpx.Client, path: str, headers: dict[str, str] | None = None
) -> Stream:
    """The stream at ``path``, read by a thread (a non-200 answer is read whole)."""
    request = client.build_request("GET", path, headers=headers)
    response = client.send(request, stream=True)
    stream = Stream(response)
    if response.status_code != 200:
        response.read()
        response.close()
        return stream

    def pump() -> None:
        try:
            _parse(response.iter_lines(), stream.events)
        except (httpx.HTTPError, RuntimeError):
            if not stream.closing:
                raise
        finally:
            stream.events.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return stream


def close(stream: Stream) -> None:
    stream.closing = True
    stream.response.close()


class Follower:
    """A client's state rebuilt from events (position -> message), by the apply rule."""

    def __init__(self) -> None:
        self.state: dict[int, Any] = {}
        self.version: str | None = None
        self.seen: list[tuple[str, list[Any]]] = []  # (version, messages) after each event

    def take(self, event: Event) -> None:
        data = event.data
        if event.kind == "snapshot":
            self.state = dict(zip(data["positions"], data["messages"], strict=True))
        else:
            assert event.kind == "change", event
            assert data["prev"] == self.version, (data["prev"], self.version)
            self.state = apply(
                self.state,
                reset=data["reset"],
                removed=[r["position"] for r in data["removed"]],
                upserts=[(u["position"], u["message"]) for u in data["upserts"]],
            )
        self.version = data["version"]
        assert event.id == self.version
        self.seen.append((self.version, in_order(self.state)))
