"""INGEST (``ingest.lua``): append deltas to one or more threads, each thread's in
order, de-duplicated by ``delta_id``, waking the threads that need it, or committing a
thread's appends itself when nothing waits before them (``committed``)."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, NamedTuple

from threadfold.core.keys import Keyspace
from threadfold.workers.redisio.client import Call, text
from threadfold.workers.storage.contract import keys_of
from threadfold.workers.storage.feed_record import FeedLimits
from threadfold.workers.storage.lua import script

SCRIPT: Final = script("ingest", "common", "state", "lifecycle", "apply")


class Keys(NamedTuple):
    """The call's one declared key: its first thread's meta. On a Cluster every thread
    of a call is in one bucket (:func:`groups_of`), so this names the call's slot; the
    script names each thread's keys itself from its bucket's tag and its ref
    (``KEY``, :func:`~threadfold.workers.storage.lua.key_functions`), and builds only
    those it touches. With thirteen keys a thread passed, building ``KEYS`` and ``ARGV``
    took 8.5% of Redis's instructions on a spread bulk, and encoding the call 11% of
    the API's CPU."""

    meta: str


class Args(NamedTuple):
    """The call's ARGV before its threads' (each: ref tag n opts {delta_id payload fps
    records}*n)."""

    dedupe_ms: int
    sched_ms: int
    n_threads: int
    #: A thread born in the call takes it as its incarnation: 62 random bits, so two
    #: incarnations of one thread differ (with odds of 2^-62 against). An integer, as
    #: the meta hash's listpack stores one in 8 bytes where 16 hex digits take 16.
    birth_token: int
    #: What a commit here keeps, as a worker's commit would (CommitPlan's fields).
    retention_ms: int
    feed_max_events: int
    feed_max_age_ms: int
    feed_max_event_bytes: int
    ttl_ms: int
    #: 1 when a delta of the call carries records (it may commit): then each delta passes
    #: its records; else three arguments a delta, as before commits at ingest (a
    #: stream's calls).
    commits: int
    #: 1 on a Cluster: a commit here publishes its change event even when no follower
    #: marked the thread and no subscriber listens on this node (a listener may hang
    #: off any node: a PUBLISH reaches all of them).
    publish_always: int


class Here(NamedTuple):
    """What a commit the call makes itself keeps, as a worker's would (its
    :class:`~threadfold.workers.storage.commit.CommitPlan` takes the same settings)."""

    retention_ms: int
    feed: FeedLimits
    ttl_ms: int
    cluster: bool


#: Most threads in one ingest call (a few hundred microseconds of server time).
MAX_THREADS_PER_INGEST: Final = 200

#: One thread's part of a call: ``(ref, [(delta_id or '', payload, encoded ids or '',
#: records or ''), ...], opts)``, opts from :func:`options` ('' for none, the common
#: case), records those of a delta the call may commit itself
#: (:func:`threadfold.workers.ingest.prepare.records_of`; b"" for none).
IngestGroup = tuple[str, Sequence[tuple[str, bytes, bytes, bytes]], bytes]


def options(
    metadata: Sequence[str | bytes],
    *,
    only_new: bool = False,
    identity: str = "",
    expect: str | None = None,
) -> bytes:
    """A thread's opts: the metadata (:func:`threadfold.core.metadata.pairs`) it is
    created with, and whether to append only if it does not exist (a copy), with the
    copy's ``identity`` (hex: its retry is answered with the thread it made), or only if
    the thread's last append made the version ``expect`` ('' : the thread must not
    exist). One line each: no key and no value's JSON holds a newline (JSON escapes it
    in a string)."""
    if not metadata and not only_new and expect is None:
        return b""
    if expect is not None:
        lines = [b"2" + expect.encode()]
    else:
        lines = [b"1" + identity.encode() if only_new else b"0"]
    lines += [x.encode() if isinstance(x, str) else x for x in metadata]
    return b"\n".join(lines)


@dataclass(frozen=True, slots=True)
class IngestAnswer:
    """One thread's part of an ingest call: each delta's version and whether it is new
    (not a retried delta_id), and whether this call set the wake-up flag."""

    versions: list[str]
    new: list[bool]
    woke: bool
    #: An ``only_new`` thread that exists: nothing was written.
    exists: bool = False
    #: The call committed the thread's appends itself: visible now, nothing to wake.
    committed: bool = False
    #: An ``expect`` that the thread's last append did not meet: nothing was written.
    moved: bool = False


# A thread's bucket tag, memoized: a CRC and a format a thread a call were a visible
# share of a bulk ingest's CPU, and a busy process touches the same threads again and
# again.
@lru_cache(maxsize=65_536)
def _tag(ks: Keyspace, ref: str) -> str:
    return ks.bucket_tag(ks.bucket_of(ref))


def call(
    ks: Keyspace, groups: Sequence[IngestGroup], dedupe_ms: int, wake_ms: int, here: Here
) -> Call:
    """One call for ``groups``. On a cluster every thread of one call must be in one
    bucket (:func:`groups_of`)."""
    feed = here.feed
    commits = any(d[3] for _, deltas, _ in groups for d in deltas)
    args: list[str | bytes | int] = [*Args(
        dedupe_ms, wake_ms, len(groups), secrets.randbits(62), here.retention_ms,
        feed.max_events, feed.max_age_ms, feed.max_event_bytes, here.ttl_ms, int(commits),
        int(here.cluster),
    )]
    for ref, deltas, opts in groups:
        args += [ref, _tag(ks, ref), len(deltas), opts]
        for delta_id, payload, mentioned, records in deltas:
            args += [delta_id, payload, mentioned, records] if commits else [
                delta_id, payload, mentioned]
    keys = list(keys_of(Keys, ks.thread(groups[0][0]))) if groups else []
    return Call(SCRIPT, keys, args)


def groups_of(ks: Keyspace, refs: Sequence[str], cluster: bool) -> list[list[str]]:
    """Which threads share an ingest call: all of them on one server (keys may span
    slots there), the threads of each bucket on a cluster (a script's keys must share
    a slot). Calls are capped so one script never holds the server for long."""
    if not cluster:
        return [
            list(refs[i : i + MAX_THREADS_PER_INGEST])
            for i in range(0, len(refs), MAX_THREADS_PER_INGEST)
        ]
    by_bucket: dict[int, list[str]] = {}
    for ref in refs:
        by_bucket.setdefault(ks.bucket_of(ref), []).append(ref)
    return [
        group[i : i + MAX_THREADS_PER_INGEST]
        for group in by_bucket.values()
        for i in range(0, len(group), MAX_THREADS_PER_INGEST)
    ]


def parse(raw: list[Any], counts: Sequence[int]) -> list[IngestAnswer]:
    """One answer per thread of the call; ``counts`` are their numbers of deltas."""
    answers, at = [], 0
    for n in counts:
        end = at + 1 + 2 * n
        versions = [text(v) for v in raw[at + 1 : end : 2]]
        new = [flag == 1 for flag in raw[at + 2 : end : 2]]
        woke = raw[at]
        answers.append(IngestAnswer(versions, new, woke == 1, woke == -1, woke == 2, woke == -2))
        at = end
    return answers
