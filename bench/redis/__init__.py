"""The Redis budget per delta: ``python -m bench.redis`` (see :mod:`bench.redis.main`)."""
