"""A/B of a redesign: CPU per HTTP request and per delta, a base commit against this
tree (``python -m bench.ab --base REV``; see :mod:`bench.ab.main`)."""
