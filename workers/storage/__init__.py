"""The Redis data model: every key's layout, every script, every exchange's contract.

One folder holds what a newcomer looks for when following a thread into Redis:

* ``<name>.lua``: a script, its ``-- KEYS:`` and ``-- ARGV:`` header first. The shared
  helpers are ``common.lua`` (ids, the fence, the backlog) and ``state.lua`` (the pages
  and index), joined at load by :mod:`.lua`.
* ``<name>.py`` beside it: the script's contract in Python, its ``Keys`` (a NamedTuple
  whose fields name :class:`~threadfold.core.keys.ThreadKeys` attributes, in the order
  the script takes them), ``Args`` where its ARGV are fixed, the call's builder, the
  answer's type and parser. A test holds each ``.lua`` header to them and loads every
  script into a real redis-server.
* :mod:`.meta`: the thread's meta hash fields, one table; :mod:`.pages`: the page and
  index format (the Python half of ``state.lua``); :mod:`.scripts`: every script.

The runners (EVALSHA, pipelines, a cluster's slots) are :mod:`threadfold.workers.redisio.client`;
the callers are the stores (:mod:`threadfold.workers.storage.store`,
:mod:`threadfold.workers.storage.astore`),
the producer, the drainer and the replay.
"""
