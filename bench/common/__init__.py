"""What every benchmark shares: the command line, timing, targets, markdown tables,
per-process CPU, result checks, input generators and the one-at-a-time oracle.

Each concern is its own small module; the benchmarks (``bench.core``, ``bench.pipeline``,
``bench.http``, ``bench.replay``) import from here and never from ``tests``.
"""
