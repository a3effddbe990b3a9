"""A thread's change feed: one event per committed version, written by COMMIT with the
state (:mod:`threadfold.workers.storage.commit`), published to live followers and kept,
bounded, for followers that resume (:mod:`threadfold.workers.storage.feed`).

:mod:`.event` is the event and its encoding, :mod:`.apply` the rule that turns the state
at one version into the next, :mod:`.follow` the chain rule a follower applies to what
it receives."""
