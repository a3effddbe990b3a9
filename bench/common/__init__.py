"""What every benchmark shares: the command line, timing, targets, markdown tables,
per-process CPU, result checks, input generators, in-process stores, and the services
they run on (:mod:`bench.common.services`: Redis servers, Celery workers and what they
cost; :mod:`bench.common.stack`: the whole running service, APIs included).

Each concern is its own small module; the benchmarks (``bench.core``, ``bench.pipeline``
and the others: one package each) import from here. Of
``tests`` they import nothing: their states are checked against the oracle
:mod:`threadfold.testing`, read from the store by :mod:`threadfold.testing.stored`.
"""
