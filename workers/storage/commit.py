"""COMMIT (``commit.lua``): compare-and-set commits of folded batches, one or more
threads per call (each stands or fails on its own): only a batch's net effect is
written, the pages it edits sent whole."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, NamedTuple

from threadfold.core.codec import encode_stored
from threadfold.core.context import approximate
from threadfold.core.fold import Effect
from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.feed_record import FeedEvent, FeedLimits
from threadfold.workers.storage.feed_record import encode as encode_event
from threadfold.workers.storage.lookup import Found
from threadfold.workers.storage.lua import script
from threadfold.workers.storage.pages import edit_page, fingerprint, record

SCRIPT: Final = script("commit", "common", "state", "lifecycle", "apply")

#: Calls of many threads merge into one (``run_merged``): per thread, its ARGV counted.
PER_THREAD: Final = True


class Keys(NamedTuple):
    meta: str
    pages: str
    index: str  # type: ignore[assignment]  # the key, as ThreadKeys names it (tuple.index unused)
    log: str
    sched: str
    dirty: str
    feed: str
    active: str
    expiry: str
    followed: str


class Args(NamedTuple):
    """A thread's ARGV before its removals, pages and inserts."""

    fence: str
    new_cursor: str
    next_position: int
    cleared: str  # '1' | '0'
    n_removed: int
    n_pages: int
    n_inserts: int
    retention_ms: int
    sched_ms: int
    ref: str
    n_entries: int
    feed_max_events: int
    feed_max_age_ms: int
    event: bytes
    ttl_ms: int


@lru_cache(maxsize=65_536)
def _keys(ks: Keyspace, ref: str) -> Keys:
    return keys_of(Keys, ks.thread(ref))


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """One thread's commit as one value: the drainer builds it from a folded batch, the
    store executes it (:func:`call`). Only the batch's net effect is written, and only
    if the thread's fence is still the one the batch was read with."""

    ref: str
    #: The fence the batch was read with (cursor, generation, incarnation).
    fence: str
    #: The batch's last entry, the thread's new cursor (version), and how many log
    #: entries the batch applies.
    cursor: str
    applied: int
    next_position: int
    effect: Effect
    #: The stored positions the batch was folded over, each confirmed against its
    #: record's id, and the pages holding them (``per`` positions each) as of the fence.
    stored: Found
    #: How long applied entries stay in the log (0: trimmed at once), and the wake-up
    #: flag's lease when a backlog remains.
    retention_ms: int
    wake_ms: int
    #: What the thread's change feed keeps of the event this commit writes.
    feed: FeedLimits
    #: The deployment's TTL of an idle thread (0: none), restarted by this commit.
    ttl_ms: int = 0


def call(ks: Keyspace, plan: CommitPlan) -> Call:
    """The compare-and-set commit of ``plan``: only its net effect is written.

    An upsert at its known position is rewritten in place; one at a new position is
    appended, and a known id re-added after a remove in the batch has its old record
    removed. The pages edited are rewritten here and sent whole: Redis's Lua hashes every
    byte of every string it makes, and a page spliced in a script was made three times
    (read, cut, joined), where a page spliced here is made once in the commit's
    arguments.
    """
    effect, stored = plan.effect, plan.stored
    known = {} if effect.cleared else stored.positions  # a clear took every stored record
    removed: list[bytes | int] = []
    changes: dict[int, bytes | None] = {}
    inserts: list[tuple[int, str, bytes, int]] = []
    # The change event says what the state says: each removal and upsert as written.
    gone: list[tuple[str, int]] = []
    upserts: list[tuple[int, str, bytes]] = []
    for key in effect.removed:
        old = known.get(key)
        if old is not None:  # else it was new in this batch: nothing stored
            removed += [fingerprint(key), old]
            changes[old] = None
            gone.append((key, old))
    for key, (position, message) in effect.upserts.items():
        body = encode_stored(message)
        upserts.append((position, key, body))
        # Each record carries its message's count, so a context read adds counts.
        tokens = approximate(message)
        old = known.get(key)
        if old == position:
            changes[position] = record(key, position, body, tokens)
            continue
        if old is not None:
            removed += [fingerprint(key), old]
            changes[old] = None
            gone.append((key, old))
        inserts.append((position, key, body, tokens))
    inserts.sort(key=_first)
    upserts.sort(key=_first)
    edited = _edited_pages(changes, stored.per, stored.pages)
    blob = encode_event(
        FeedEvent(plan.cursor, _cursor_of(plan.fence), effect.cleared, gone, upserts)
    )
    head = Args(
        plan.fence,
        plan.cursor,
        plan.next_position,
        "1" if effect.cleared else "0",
        len(removed) // 2,
        len(edited) // 2,
        len(inserts),
        plan.retention_ms,
        plan.wake_ms,
        plan.ref,
        plan.applied,
        plan.feed.max_events if len(blob) <= plan.feed.max_event_bytes else 0,
        plan.feed.max_age_ms,
        blob,
        plan.ttl_ms,
    )
    args: list[str | bytes | int] = [*head, *removed, *edited]
    for position, key, body, tokens in inserts:
        args += [fingerprint(key), position, record(key, position, body, tokens)]
    # Counted, so that calls of many threads merge into one (``run_merged``); a call's
    # answer is a list of one section per thread (``parse`` takes one).
    return Call(SCRIPT, _keys(ks, plan.ref), [len(args), *args])


def _edited_pages(
    changes: Mapping[int, bytes | None], per: int, pages: Mapping[int, bytes]
) -> list[bytes | int]:
    """``{page_number, page}*`` of the pages ``changes`` rewrite (b"" when emptied)."""
    by_page: dict[int, dict[int, bytes | None]] = {}
    for position, change in changes.items():
        by_page.setdefault(position // per, {})[position] = change
    out: list[bytes | int] = []
    for number, edits in by_page.items():
        out += [number, edit_page(pages[number], edits)]
    return out


def _first(item: tuple[int, str, bytes, int] | tuple[int, str, bytes]) -> int:
    return item[0]


def _cursor_of(fence: str) -> str:
    """The cursor part of a fence (``c``, then ``@g`` and ``#i`` when set): the version
    the batch was folded on, the event's ``prev``."""
    return fence.partition("#")[0].partition("@")[0]


@dataclass(frozen=True, slots=True)
class Committed:
    """A commit's answer: refused (the fence moved), or done, with backlog left or not."""

    ok: bool
    more: bool = False
    now_ms: int = 0


def parse(raw: list[Any]) -> Committed:
    """One thread's section of the answer."""
    if int(raw[0]) != 1:
        return Committed(ok=False)
    return Committed(ok=True, more=bool(int(raw[1])), now_ms=int(raw[2]))
