"""Every Redis key threadfold uses, built in this one place.

All keys of one thread share one hash tag, so every script touches one slot and runs
unchanged on Redis Cluster. The tag is the thread's *bucket* (``{tf:b0427}``), not the
thread itself: the bucket's index keys (threads with a backlog, quarantined threads,
all threads) then live in the same slot as the thread keys, and the ingest and commit
scripts keep them exact atomically, with no global hot key. 1,024 buckets spread over
the 16,384 slots of a cluster.

A thread is named by its *ref*, ``<tenant>/<thread_id>``: tenants are namespaced in the
keyspace itself, not filtered after reading.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from threadfold.core.errors import ThreadfoldError

DEFAULT_TENANT: Final = "_"
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
NAME_RULE: Final = "1 to 128 characters from A-Z a-z 0-9 . _ : @ -"


class InvalidName(ThreadfoldError, ValueError):
    """Raised when a thread id or tenant is outside the documented charset or length."""


def check_name(value: object, what: str) -> str:
    """``value`` if it is a valid thread id / tenant name, else :class:`InvalidName`."""
    if not isinstance(value, str) or NAME_PATTERN.fullmatch(value) is None:
        raise InvalidName(f"{what} must be {NAME_RULE}; got {value!r}")
    return value


@lru_cache(maxsize=65_536)  # checked once per busy thread, not once per delta
def make_ref(tenant: str, thread_id: str) -> str:
    """The ref of a thread: what tasks carry and index sets hold."""
    return f"{check_name(tenant, 'tenant')}/{check_name(thread_id, 'thread id')}"


def split_ref(ref: str) -> tuple[str, str]:
    """``(tenant, thread_id)`` of a ref."""
    tenant, sep, thread_id = ref.partition("/")
    if not sep:
        raise InvalidName(f"a thread ref is <tenant>/<thread id>; got {ref!r}")
    return check_name(tenant, "tenant"), check_name(thread_id, "thread id")


@dataclass(frozen=True, slots=True)
class ThreadKeys:
    """The keys of one thread (and of its bucket)."""

    ref: str
    tag: str

    @property
    def log(self) -> str:
        """STREAM: the deltas in arrival order; an entry id is a version."""
        return f"{self.tag}:{self.ref}:log"

    @property
    def meta(self) -> str:
        """HASH: cursor (version), next position, message count, times, failures,
        quarantine: its fields are in :mod:`threadfold.workers.storage.meta`."""
        return f"{self.tag}:{self.ref}:meta"

    @property
    def pages(self) -> str:
        """HASH: page number -> its records (:mod:`threadfold.workers.storage.pages`)."""
        return f"{self.tag}:{self.ref}:pages"

    @property
    def index(self) -> str:
        """HASH: bucket -> (id fingerprint, position) entries, a linear hash.

        The format is in :mod:`threadfold.workers.storage.pages`.
        """
        return f"{self.tag}:{self.ref}:index"

    @property
    def state(self) -> tuple[str, str]:
        """The keys of the thread's messages, in the order the scripts take them."""
        return (self.pages, self.index)

    @property
    def sched(self) -> str:
        """STRING with a TTL: the wake-up flag, a lease on draining the thread."""
        return f"{self.tag}:{self.ref}:sched"

    @property
    def dedupe(self) -> str:
        """HASH: producer ``delta_id`` -> the version it was given."""
        return f"{self.tag}:{self.ref}:dd"

    @property
    def dedupe_expiry(self) -> str:
        """ZSET: ``delta_id`` -> ms its dedupe entry expires (Redis 7.0 has no field TTL)."""
        return f"{self.tag}:{self.ref}:ddx"

    @property
    def feed(self) -> str:
        """STREAM: the thread's change feed, one entry per committed version (entry id =
        the version; fields ``p`` the version it applies on, ``e`` the event), and the
        Pub/Sub channel its events are published on
        (:mod:`threadfold.workers.storage.feed_record`)."""
        return f"{self.tag}:{self.ref}:feed"

    @property
    def followed(self) -> str:
        """STRING with a TTL: a follower marked the thread within its window
        (:mod:`threadfold.workers.feed.marks`); while it exists, commits keep their change
        events in the feed. Kept across a delete (it marks the thread id followed, not an
        incarnation of it); it lapses on its own."""
        return f"{self.tag}:{self.ref}:followed"

    @property
    def metadata(self) -> str:
        """HASH: metadata key -> its value's canonical JSON (:mod:`threadfold.core.metadata`);
        absent while the thread has none."""
        return f"{self.tag}:{self.ref}:md"

    # -- a LangGraph checkpointer's (threadfold.langgraph.ThreadfoldSaver): its
    # checkpoints live with the thread, so a delete, a prune or the TTL removes them
    # with it. A checkpoint's field is ``<checkpoint_ns>\n<checkpoint_id>``.

    @property
    def checkpoints(self) -> str:
        """HASH: checkpoint field -> its record
        (:mod:`threadfold.workers.storage.checkpoint_put`)."""
        return f"{self.tag}:{self.ref}:cp"

    @property
    def checkpoint_order(self) -> str:
        """ZSET, every score 0: the checkpoint fields, so one lexicographic range lists a
        namespace's checkpoints by id (LangGraph's ids sort by time)."""
        return f"{self.tag}:{self.ref}:cpo"

    @property
    def checkpoint_versions(self) -> str:
        """HASH: checkpoint field -> the thread's version at which the thread's messages
        are that checkpoint's (absent when unknown)."""
        return f"{self.tag}:{self.ref}:cpv"

    @property
    def checkpoint_blobs(self) -> str:
        """HASH: ``<ns>\n<channel>\n<version>`` -> a channel value (type, bytes)."""
        return f"{self.tag}:{self.ref}:cpb"

    @property
    def checkpoint_writes(self) -> str:
        """HASH: ``<field>\n<task_id>\n<idx>`` -> a pending write."""
        return f"{self.tag}:{self.ref}:cpw"

    @property
    def checkpoint_write_order(self) -> str:
        """ZSET, every score 0: the pending writes' fields, a checkpoint's in one range."""
        return f"{self.tag}:{self.ref}:cpwo"

    @property
    def checkpoint_runs(self) -> str:
        """HASH: checkpoint field -> the ``run_id`` of its metadata (when it has one)."""
        return f"{self.tag}:{self.ref}:cpr"

    @property
    def tenant(self) -> str:
        return self.ref.partition("/")[0]

    @property
    def born(self) -> str:
        """ZSET of the bucket, one per tenant: ref -> ms the thread was created (its
        current incarnation's first append): a search sorted by creation."""
        return f"{self.tag}:born:{self.tenant}"

    @property
    def terms(self) -> str:
        """ZSET of the bucket, one per tenant, every score 0: ``<term><ref>`` for each
        metadata key and value a thread holds (:func:`threadfold.core.metadata.term`), so
        one lexicographic range lists a term's threads."""
        return f"{self.tag}:mdx:{self.tenant}"

    @property
    def run_index(self) -> str:
        """ZSET of the bucket, one per tenant, every score 0: ``<run_id>\n<ref>`` for each
        run a thread's checkpoints name (LangGraph's ``delete_for_runs``)."""
        return f"{self.tag}:cpruns:{self.tenant}"

    @property
    def expiry(self) -> str:
        """ZSET of the bucket: ref -> ms the thread expires, for each idle thread with a
        TTL (the sweeper's work list; a thread with a backlog is out of it until its
        commit)."""
        return f"{self.tag}:expiry"

    @property
    def active(self) -> str:
        """ZSET of the bucket, one per tenant: ref -> ms of the thread's last commit (the
        threads list's recent activity)."""
        return f"{self.tag}:active:{self.tenant}"

    @property
    def dirty(self) -> str:
        """ZSET of the bucket: ref -> ms since it has had a backlog."""
        return f"{self.tag}:dirty"

    @property
    def quarantine(self) -> str:
        """ZSET of the bucket: ref -> ms it was quarantined."""
        return f"{self.tag}:quarantine"

    @property
    def threads(self) -> str:
        """SET of the bucket: the refs of its threads that exist (an append adds one,
        a delete, an expiry or a prune removes it: forget() in lifecycle.lua)."""
        return f"{self.tag}:threads"



@dataclass(frozen=True, slots=True)
class Keyspace:
    """Key names under one prefix; ``buckets`` must stay fixed for a deployment."""

    prefix: str = "tf"
    buckets: int = 1024

    def bucket_of(self, ref: str) -> int:
        return zlib.crc32(ref.encode()) % self.buckets

    def bucket_tag(self, bucket: int) -> str:
        return f"{{{self.prefix}:b{bucket:04d}}}"

    def thread(self, ref: str) -> ThreadKeys:
        return ThreadKeys(ref, self.bucket_tag(self.bucket_of(ref)))

    def bucket_keys(self, bucket: int) -> ThreadKeys:
        """Keys of a bucket's index sets (the ref part is unused)."""
        return ThreadKeys("", self.bucket_tag(bucket))

    def bucket_of_tenant(self, bucket: int, tenant: str) -> ThreadKeys:
        """Keys of a bucket's index sets, with a tenant's own among them."""
        return ThreadKeys(f"{tenant}/", self.bucket_tag(bucket))

    @property
    def sweep_cursor(self) -> str:
        """STRING: a counter, the next bucket the TTL sweep visits (modulo buckets)."""
        return f"{{{self.prefix}:sweep}}:next"

    @property
    def metrics_procs(self) -> str:
        """ZSET: process id -> ms of its last metrics flush (one slot for all metrics)."""
        return f"{{{self.prefix}:metrics}}:procs"

    @property
    def metrics_totals(self) -> str:
        """HASH: the fleet-wide counters, only ever incremented (see threadfold.workers.metrics)."""
        return f"{{{self.prefix}:metrics}}:totals"

    @property
    def metrics_gauges(self) -> str:
        """HASH: ``<process>|<gauge>`` -> the process's value at its last flush (a live
        process's count, e.g. its event-stream subscribers; summed over live processes)."""
        return f"{{{self.prefix}:metrics}}:gauges"

    def job(self, job_id: str) -> str:
        """HASH: a recompute job's results, ref -> JSON (one slot for all jobs)."""
        return f"{{{self.prefix}:jobs}}:{job_id}"

    def job_slices(self, job_id: str) -> str:
        """HASH: a recompute job's running slices, slice id -> JSON (its threads, when it
        started): what tells a slice its time limit killed from one still queued."""
        return f"{{{self.prefix}:jobs}}:{job_id}:slices"
