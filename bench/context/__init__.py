"""The context window benchmark: see :mod:`bench.context.main`."""
