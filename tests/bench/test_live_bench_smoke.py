"""The live benchmark's correctness path on tiny sizes: real Redis, API, Celery workers,
SSE subscribers.

No timing is asserted. What is checked: the SSE reader parses the endpoint's stream
however its bytes are split; every subscriber follows its thread to the final version
and holds exactly ``GET state``'s messages; the commit clock stamps every version a
subscriber received; the API follows its threads on one Pub/Sub connection; the reports
and JSON are written.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from bench.live import report, subscribers, targets
from bench.live.figures import LiveResult
from bench.live.reader import SseEvent, SseProtocol

TINY = subscribers.LiveConfig(threads=3, per_thread=3, rate=150.0, seconds=1.5, prefill=3,
                              client_processes=1, celery_workers=1, finish_timeout=60.0)


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


STREAM = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
          b"transfer-encoding: chunked\r\n\r\n"
          + _chunk(b"retry: 1000\n\n")
          + _chunk(b"event: snapshot\nid: 0-0\ndata: {}\n\n")
          + _chunk(b": heartbeat\n\n")
          + _chunk(b"event: change\nid: 5-1\ndata: [1]\n\nevent: change\nid: 5-2\n")
          + _chunk(b"data: [2]\n\n")
          + b"0\r\n\r\n")


def _parse(pieces: list[bytes]) -> tuple[list[SseEvent], list[str]]:
    events: list[SseEvent] = []
    ends: list[str] = []
    protocol = SseProtocol(b"", events.append, ends.append)
    for piece in pieces:
        protocol.data_received(piece)
    return events, ends


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, len(STREAM)])
def test_the_reader_parses_the_stream_however_it_is_split(size: int) -> None:
    events, ends = _parse([STREAM[i:i + size] for i in range(0, len(STREAM), size)])
    assert [(e.kind, e.id, e.data) for e in events] == [
        (b"snapshot", b"0-0", b"{}"), (b"change", b"5-1", b"[1]"), (b"change", b"5-2", b"[2]")]
    assert ends == ["eof"]


def test_the_reader_keeps_what_follows_the_snapshot_until_flushed() -> None:
    """After its first event a stream keeps its reads, each with its arrival time, and
    parses them when flushed (a slice at a time) or when the body ends."""
    events: list[SseEvent] = []
    ends: list[str] = []
    protocol = SseProtocol(b"", events.append, ends.append)
    body = STREAM[: STREAM.index(b"0\r\n\r\n")]
    cut = body.index(b"event: change")
    protocol.data_received(body[:cut])
    assert [e.kind for e in events] == [b"snapshot"]
    protocol.data_received(body[cut:cut + 20])
    protocol.data_received(body[cut + 20:])
    _, second = protocol.pending_at
    assert [e.kind for e in events] == [b"snapshot"] and len(protocol.pending) == 2
    assert protocol.flush(1) and len(events) == 1  # the first read completes no event
    assert not protocol.flush() and [e.id for e in events[1:]] == [b"5-1", b"5-2"]
    assert ends == []
    assert [e.at for e in events[1:]] == [second, second]  # the read that completed each


def test_a_refused_stream_ends_with_its_status() -> None:
    events, ends = _parse([b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\n\r\n"])
    assert events == [] and ends == ["status 503"]


@pytest.fixture(scope="module")
def live() -> LiveResult:
    with tempfile.TemporaryDirectory(prefix="threadfold-live-") as logs:
        return subscribers.measure(TINY, Path(logs), lambda message: None)


def test_every_subscriber_ends_on_get_state(live: LiveResult) -> None:
    assert live.subscriptions == TINY.threads * TINY.per_thread
    assert live.mismatches == 0, live.mismatch_examples
    assert live.chain_breaks == 0 and live.snapshots == {"start": live.subscriptions}
    assert live.produced["sent"] > 0 and live.versions > 0


def test_every_received_change_has_its_commit_stamp(live: LiveResult) -> None:
    assert live.changes_received > 0 and live.unmatched == 0
    assert live.commit_to_event.count == live.changes_received


def test_the_api_follows_its_threads_on_one_pubsub_connection(live: LiveResult) -> None:
    assert live.api_redis["pubsub_connections"] == 1
    assert live.api_redis["pubsub_channels"] == [TINY.threads]
    assert targets.hub(live).passed and targets.states(live).passed


def test_the_live_report_and_json_are_written(live: LiveResult, tmp_path: Path) -> None:
    text = "\n".join(report.live_section(live))
    assert "commit-to-event" in text and f"{live.subscriptions}" in text
    out = tmp_path / "live.json"
    out.write_text(json.dumps(live.to_json(), default=str))
    data = json.loads(out.read_text())
    assert data["memory"]["samples"] > 0 and data["commit_to_event"]["count"] > 0
