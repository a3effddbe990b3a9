"""Live threads: a thread's change feed, one event per committed version, written by
COMMIT with the state (:mod:`threadfold.workers.storage.commit`; the record and its
encoding, :mod:`threadfold.workers.storage.feed_record`), published to live followers
and kept, bounded, for followers that resume (:mod:`threadfold.workers.storage.feed`).

Here, what follows it: :mod:`.apply` the rule that turns the state at one version into
the next, :mod:`.follow` the chain rule a follower applies to what it receives,
:mod:`.events` what a subscription yields (a snapshot, then changes, and a deleted
event when the thread is removed), :mod:`.bodies` their wire bodies, :mod:`.hub` one
Pub/Sub reader for many followers (its :mod:`.subscriber`), :mod:`.subscription` a
direct client's follow loop. "Feed" is the one name for all of it; ``subscribe()`` is
the operation that reads it.
"""
