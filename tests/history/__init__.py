"""A model-based concurrent test of replay (issue 14): a Jepsen-style history check.

Random operations run together against real processes (redis-server, Celery workers,
beat, the API): writers over HTTP and the Python producer, deletes, poison entries
appended by hand, retries with and without ``--skip``, audits and rebuilds (in process
and through the CLI), time-travel reads and live reads, with a retention so short that
commits trim all the time. Every operation's invocation, answer and wall-clock interval
goes into a :class:`~tests.history.model.History`; :func:`~tests.history.checker.check`
then verifies offline that every answer is one the system could give at some instant of
that interval, against the one-delta-at-a-time fold of the log the writers were told
about. ``tests/workers/test_history.py`` runs it briefly in ``make test``;
``python -m tests.history --minutes N`` runs it long.

It is a test, so it lives with the tests (issue 21; it was ``bench/history``) and
imports nothing from ``bench``: a run is handed a :class:`~tests.history.session.Target`
by whoever started the processes, and its oracle is :mod:`threadfold.testing`'s fold.
"""
