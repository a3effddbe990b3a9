"""The thread service: every operation a thread has, defined once for the HTTP API and
the direct clients (:mod:`.service`), with its arguments' checks (:mod:`.query`), the
rules of a read (:mod:`.reads`), its results (:mod:`.results`) and its one error tree
(:mod:`.errors`). The reads underneath: time travel's consistent prefix of a log
(:mod:`.prefix`), replay and audit (:mod:`.replay`), the threads list (:mod:`.listing`).

This package and :mod:`threadfold.workers.feed` and :mod:`threadfold.workers.settings`
are all the HTTP API and the clients import of the engine (tests/test_layout.py).
Its modules are imported by name: :mod:`.errors` and :mod:`.results` carry no Redis,
so the HTTP clients can import them alone.
"""
