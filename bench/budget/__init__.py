"""The CPU budget per delta: each part of the pipeline beside its floor (see
:mod:`bench.budget.main`)."""
