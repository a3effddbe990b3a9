"""Load tests of a threadfold deployment with Locust: realistic users, a visibility metric,
and a correctness check of every thread written against the fold of what was sent.

``python -m threadfold.loadtests --host URL`` runs it headless (:mod:`threadfold.loadtests.run`);
the scenarios are in :mod:`threadfold.loadtests.locustfile`. Only the locustfile imports Locust (it
monkey-patches
the standard library with gevent), so the other modules stay importable from tests.
"""
