"""A thread's meta hash (key ``...:meta``): its fields, one table, one name each.

The scripts (the ``.lua`` files of this package) read and write these fields by their
letters; Python names them only through the constants below, so a field's letter, its
meaning, its writers and its readers are found here (``layout`` is the check of
:mod:`threadfold.workers.storage.layout`, ``version_of`` the version read below). Letters are
short because every field is stored in every thread's hash. "commit" below is
``apply.lua``'s ``write_commit``: COMMIT's, and INGEST's when a call commits a thread's
appends itself (which also reads ``c``, ``q``, ``n``, ``ib`` and COMMIT's fields first).

======  ================  ==========================  ==============  ========================
letter  name              meaning                     written by      read by
======  ================  ==========================  ==============  ========================
``c``   CURSOR            the last applied entry id:  commit, retry   head, candidates,
                          the thread's version        --skip          commit, retry, wake,
                                                                      read_state, status,
                                                                      backlog, prefix,
                                                                      version_of
``g``   GENERATION        rebuilds so far (in the     rebuild         head, candidates,
                          fence)                                      commit, rebuild, prefix
``i``   INCARNATION       a random token of the call  ingest (birth)  head, candidates,
                          that created the thread                     commit, rebuild, prefix,
                          (in the fence)                              log_fence
``b``   BIRTH             the current incarnation's   ingest (birth)  prefix, ingest (a
                          first entry                                 copy's retry)
``cp``  COPY_IDENTITY     set by a copy: a digest of  ingest (birth)  ingest (a copy's
                          its source and delta_id                     retry)
``e``   ENQUEUED          the last entry appended;    ingest          status, prefix,
                          set = the thread exists                     log_fence, version_of,
                                                                      threads_recent
``n``   NEXT_POSITION     the next free message       commit,         head
                          position                    rebuild
``m``   MESSAGES          the messages the state      commit,         commit, read_state,
                          holds                       rebuild         status, layout
``ib``  INDEX_BUCKETS     buckets of the id index (a  commit,         candidates, commit,
                          linear hash)                rebuild         read_state, lookup,
                                                                      layout
``pp``  PER_PAGE          positions per page, chosen  commit,         candidates, commit,
                          when the state starts       rebuild         read_state, lookup,
                          empty                                       layout
``k``   APPLIED           entries applied or skipped  commit, retry   commit, status, backlog
                          (backlog: entries-added -   --skip
                          k)
``t``   COMMITTED_MS      the last commit's time      commit          status
                          (ms)
``a``   ATTEMPTS          drain attempts since the    candidates,     fail, status
                          last commit                 commit, retry
``q``   QUARANTINE        why the thread is           fail (retry     head, ingest, retry,
                          quarantined                 deletes)        wake, status, backlog
``qe``  QUARANTINE_ENTRY  the entry the drain failed  fail (retry     retry, status, backlog
                          on                          deletes)
``sk``  SKIPPED           the latest skipped entries  retry --skip    status
                          (JSON, at most
                          SKIPPED_KEPT)
``sc``  SKIP_COUNT        entries skipped in all      retry --skip    prefix
                          (each XDEL'd)
``rb``  RETAINED_BEFORE   an earlier release's mark   (no longer      prefix (the log is not
                          of a retention trim         written)        whole)
``fb``  FEED_BASE         the cursor at the last      rebuild         feed
                          rebuild: no follower's
                          state at or before it is
                          resumed from the feed
``x``   TTL               the thread's own TTL (ms;   patch           commit, status, patch,
                          absent: the deployment's)                   touch, expire
``pn``  PINNED            set: the thread never       patch           commit, status, patch,
                          expires                                     touch, expire, prune
======  ================  ==========================  ==============  ========================

The *fence* a commit compares is ``c``, then ``@g`` once a rebuild happened, then
``#i`` (:func:`fence`): a commit stands only if none moved.

A log entry (the stream ``...:log``) has the fields ``d`` (:data:`ENTRY_PAYLOAD`, the
encoded delta) and ``f`` (:data:`ENTRY_FINGERPRINTS`, 4 bytes per id the delta names),
written by ingest.
"""

from __future__ import annotations

from typing import Any, Final

from threadfold.workers.redisio.client import text

CURSOR: Final = "c"
GENERATION: Final = "g"
INCARNATION: Final = "i"
BIRTH: Final = "b"
COPY_IDENTITY: Final = "cp"
ENQUEUED: Final = "e"
NEXT_POSITION: Final = "n"
MESSAGES: Final = "m"
INDEX_BUCKETS: Final = "ib"
PER_PAGE: Final = "pp"
APPLIED: Final = "k"
COMMITTED_MS: Final = "t"
ATTEMPTS: Final = "a"
QUARANTINE: Final = "q"
QUARANTINE_ENTRY: Final = "qe"
SKIPPED: Final = "sk"
SKIP_COUNT: Final = "sc"
RETAINED_BEFORE: Final = "rb"
FEED_BASE: Final = "fb"
TTL: Final = "x"
PINNED: Final = "pn"

#: Every meta field, by name (the table above; a test holds the scripts to it).
FIELDS: Final = {
    "CURSOR": CURSOR,
    "GENERATION": GENERATION,
    "INCARNATION": INCARNATION,
    "BIRTH": BIRTH,
    "COPY_IDENTITY": COPY_IDENTITY,
    "ENQUEUED": ENQUEUED,
    "NEXT_POSITION": NEXT_POSITION,
    "MESSAGES": MESSAGES,
    "INDEX_BUCKETS": INDEX_BUCKETS,
    "PER_PAGE": PER_PAGE,
    "APPLIED": APPLIED,
    "COMMITTED_MS": COMMITTED_MS,
    "ATTEMPTS": ATTEMPTS,
    "QUARANTINE": QUARANTINE,
    "QUARANTINE_ENTRY": QUARANTINE_ENTRY,
    "SKIPPED": SKIPPED,
    "SKIP_COUNT": SKIP_COUNT,
    "RETAINED_BEFORE": RETAINED_BEFORE,
    "FEED_BASE": FEED_BASE,
    "TTL": TTL,
    "PINNED": PINNED,
}

#: Skipped entries a thread's meta lists (``sk``, the latest; ``sc`` counts them all):
#: enough to see what an operator dropped, bounded however often it happens.
SKIPPED_KEPT: Final = 20

ENTRY_PAYLOAD: Final = "d"
ENTRY_FINGERPRINTS: Final = "f"


def fence(cursor: Any, generation: Any, incarnation: Any) -> str:
    """What a commit compares (as the scripts' ``fence()`` builds it from c, g, i)."""
    out = text(cursor) if cursor is not None else "0-0"
    if generation is not None:
        out += "@" + text(generation)
    if incarnation is not None:
        out += "#" + text(incarnation)
    return out


#: What a version read asks of a meta hash (:func:`version_of` reads the answer).
VERSION_FIELDS: Final = (CURSOR, ENQUEUED)


def version_of(values: Any) -> str | None:
    """A thread's version from its meta's :data:`VERSION_FIELDS`, or None when it was
    never written (or deleted)."""
    cursor, enqueued = values
    if cursor is None and enqueued is None:
        return None
    return text(cursor) if cursor is not None else "0-0"
