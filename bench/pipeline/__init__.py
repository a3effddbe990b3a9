"""The pipeline benchmark's parts: producer -> Redis -> Celery workers -> committed state.

Run through :mod:`bench.pipeline_bench`. Every service is a real process on this
machine (``redis-server``, ``celery worker``); speed is compared as ratios within one run.
"""
