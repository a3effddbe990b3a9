"""The pipeline benchmark's parts: producer -> Redis -> Celery workers -> committed state.

Run as ``python -m bench.pipeline`` (:mod:`bench.pipeline.main`). Every service is a
real process on this machine (``redis-server``, ``celery worker``); speed is compared as
ratios within one run.
"""
