"""The thread service: every operation a thread has, defined once for the HTTP API and
the direct clients (:mod:`.service`), with its arguments' checks (:mod:`.query`), the
rules of a read (:mod:`.reads`) and the threads list (:mod:`.listing`); its results are
:mod:`threadfold.core.results`, and a service is built from settings by
:mod:`threadfold.workers.wiring`, the composition root. Its refusals are the one error
tree's (:mod:`threadfold.core.errors`); time travel is replay's
(:mod:`threadfold.workers.replay`).

This package, :mod:`threadfold.workers.feed`, :mod:`threadfold.workers.settings` and
:mod:`threadfold.workers.wiring` are all the HTTP API and the clients import of the
engine (tests/test_layout.py). Its modules are imported by name: :mod:`.query` carries
no Redis, so the HTTP clients can import it alone.
"""
