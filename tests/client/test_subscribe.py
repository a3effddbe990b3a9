"""``subscribe()`` of every kind of client, against the real stack: the events rebuild
exactly what ``state()`` reads, a resume carries on from its version with nothing twice
and nothing lost, and every break of the chain is answered with a snapshot."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from tests.client.kinds import new_thread
from threadfold import (
    Change,
    ClientProtocol,
    Deleted,
    Event,
    InvalidInput,
    NotFound,
    Snapshot,
    Transcript,
)

#: No test here waits this long unless an event it waits for never comes.
PATIENCE = 60


@contextlib.contextmanager
def deadline(seconds: int = PATIENCE) -> Iterator[None]:
    """Fail, rather than hang, when an awaited event never arrives (a blocked read is
    interrupted by the alarm's exception)."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"no event within {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _until(events: Iterator[Event], transcript: Transcript, version: str) -> list[Event]:
    """Take events into ``transcript`` until it reaches ``version``; the events taken."""
    taken = []
    while transcript.version != version:
        event = next(events)
        transcript.apply(event)  # raises if a change does not apply on the version held
        taken.append(event)
    return taken


def _write(client: ClientProtocol, thread: str, n: int, tag: str) -> str:
    """``n`` deltas that append, update, stream and remove; the version once applied."""
    last = ""
    for i in range(n):
        messages: list[object] = [{"role": "user", "content": f"{tag}{i}", "id": f"{tag}{i}"}]
        if i % 3 == 1:
            messages.append({"role": "assistant", "content": f"updated {i}", "id": f"{tag}0"})
        if i % 4 == 3:
            messages.append({"type": "remove", "id": f"{tag}{i - 2}", "content": ""})
        if i % 4 == 2:  # served as two messages in the OpenAI form
            blocks = [{"type": "text", "text": "see"},
                      {"type": "tool_result", "tool_use_id": f"c{i}", "content": "42"}]
            messages.append({"role": "user", "content": blocks, "id": f"{tag}tool"})
        last = client.append(thread, messages).version
    return client.wait_for(thread, last, timeout=30)


@pytest.mark.parametrize("fmt", ["langchain", "openai"])
def test_events_rebuild_the_state_read(client: ClientProtocol, fmt: str) -> None:
    thread = new_thread()
    transcript = Transcript()
    with deadline():
        events = client.subscribe(thread, format=fmt)  # type: ignore[arg-type]
        first = next(events)
        assert isinstance(first, Snapshot)
        assert (first.exists, first.version, first.messages, first.reason) == (
            False, "0-0", [], "start"
        )
        transcript.apply(first)
        for round_ in range(3):
            version = _write(client, thread, 4, f"r{round_}-")
            taken = _until(events, transcript, version)
            assert all(isinstance(e, Change) for e in taken)
            read = client.state(thread, format=fmt)  # type: ignore[arg-type]
            assert (transcript.version, transcript.messages) == (read.version, read.messages)
        events.close()  # type: ignore[attr-defined]


def test_a_transcript_follows_the_context_window_the_api_reads(client: ClientProtocol) -> None:
    # The live window, client side: a transcript's context() after each change is
    # what context() reads at that version.
    thread = new_thread()
    transcript = Transcript(thread)
    trims: list[dict[str, object]] = [
        {"max_tokens": 30},
        {"max_tokens": 60, "include_system": True, "start_on": "human"},
        {"max_tokens": 45, "strategy": "first", "end_on": ["human", "ai"]},
    ]
    with deadline():
        events = client.subscribe(thread)
        transcript.apply(next(events))
        client.append(thread, [{"role": "system", "content": "Be brief.", "id": "sys"}])
        for round_ in range(3):
            version = _write(client, thread, 4, f"w{round_}-")
            _until(events, transcript, version)
            for trim in trims:
                budget = trim["max_tokens"]
                rest = {k: v for k, v in trim.items() if k != "max_tokens"}
                assert isinstance(budget, int)
                here = transcript.context(budget, **rest)  # type: ignore[arg-type]
                read = client.context(thread, budget, **rest)  # type: ignore[arg-type]
                assert here == read, trim
        events.close()  # type: ignore[attr-defined]


def test_a_resume_carries_on_with_nothing_twice_and_nothing_lost(client: ClientProtocol) -> None:
    thread = new_thread()
    transcript = Transcript()
    with deadline():
        events = client.subscribe(thread)
        transcript.apply(next(events))
        _until(events, transcript, _write(client, thread, 5, "a"))
        held = transcript.version
        assert held is not None
        events.close()  # type: ignore[attr-defined]
        final = _write(client, thread, 6, "b")  # while nobody listens
        resumed = client.subscribe(thread, after=held)
        taken = _until(resumed, transcript, final)
        assert all(isinstance(e, Change) for e in taken)  # no snapshot: the feed reaches back
        assert isinstance(taken[0], Change) and taken[0].prev == held
        versions = [e.version for e in taken]
        assert len(versions) == len(set(versions))
        assert transcript.messages == client.state(thread).messages
        resumed.close()  # type: ignore[attr-defined]


def test_a_version_the_feed_cannot_resume_from_gets_a_snapshot(client: ClientProtocol) -> None:
    thread = new_thread()
    with deadline():
        version = _write(client, thread, 3, "g")
        events = client.subscribe(thread, after="1-0")
        first = next(events)
        assert isinstance(first, Snapshot)
        assert (first.reason, first.version, first.exists) == ("resume_gap", version, True)
        assert first.messages == client.state(thread).messages
        events.close()  # type: ignore[attr-defined]


def test_a_delete_is_deleted_then_changes_of_the_new_thread_on_0_0(
    client: ClientProtocol,
) -> None:
    thread = new_thread()
    transcript = Transcript()
    with deadline():
        _write(client, thread, 2, "d")
        events = client.subscribe(thread)
        transcript.apply(next(events))
        client.delete(thread)
        gone = next(events)
        assert gone == Deleted(thread, "0-0", "deleted") and gone.kind == "deleted"
        transcript.apply(gone)
        assert (transcript.version, transcript.messages) == ("0-0", [])
        taken = _until(events, transcript, _write(client, thread, 2, "n"))
        assert all(isinstance(e, Change) for e in taken)  # no snapshot: they chain on 0-0
        assert isinstance(taken[0], Change) and taken[0].prev == "0-0"
        assert transcript.messages == client.state(thread).messages
        events.close()  # type: ignore[attr-defined]
        # Resumed from the deleted event's version: the new thread's changes, from 0-0.
        resumed = client.subscribe(thread, after=gone.version)
        again = Transcript()
        again.apply(gone)
        taken = _until(resumed, again, transcript.version or "")
        assert all(isinstance(e, Change) for e in taken)
        assert again.messages == transcript.messages
        resumed.close()  # type: ignore[attr-defined]
        with pytest.raises(NotFound):
            client.delete(new_thread())


def test_a_malformed_after_or_format_is_refused_naming_it(client: ClientProtocol) -> None:
    for kwargs, field in (({"after": "yesterday"}, "after"), ({"format": "xml"}, "format")):
        with deadline(), pytest.raises(InvalidInput) as caught:
            next(client.subscribe(new_thread(), **kwargs))  # type: ignore[arg-type]
        assert caught.value.field == field
        assert caught.value.status == 400
