"""The removal notice a thread's feed channel carries (``deleted:<reason>``), unit-level:
told apart from a change event and a resync, and only for the reasons it names."""

from __future__ import annotations

from typing import get_args

import pytest

from threadfold.workers.storage.feed_record import (
    DELETED_PREFIX,
    REMOVALS,
    RESYNC,
    FeedEvent,
    Removal,
    decode,
    encode,
    removal_notice,
    removal_of,
)


def test_each_reason_is_its_notice_and_back() -> None:
    assert get_args(Removal) == REMOVALS
    for reason in REMOVALS:
        payload = removal_notice(reason)
        assert payload == b"deleted:" + reason.encode() == DELETED_PREFIX + reason.encode()
        assert removal_of(payload) == reason
        assert decode(payload) is None  # a reader that knows no notices resyncs on it
    assert removal_of(b"deleted:expired") == "expired"


@pytest.mark.parametrize(
    "payload",
    [RESYNC, b"deleted:", b"deleted:moved", b"deleted:deleted ", b"DELETED:deleted",
     b"deleted", b"xdeleted:deleted"],
)
def test_anything_else_is_no_removal(payload: bytes) -> None:
    assert removal_of(payload) is None


def test_an_event_is_never_read_as_a_notice() -> None:
    for event in (FeedEvent("1-0", "0-0"), FeedEvent("5-1", "3-0", True, [("m", 0)])):
        blob = encode(event)
        assert not blob.startswith(DELETED_PREFIX) and removal_of(blob) is None
        assert decode(blob) == event
    assert decode(b"deleted:moved") is None  # an unknown reason: a resync, not an error
