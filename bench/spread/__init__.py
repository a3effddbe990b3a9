"""The spread shape, issue 24's items 2 and 3: one-message deltas over 5,000 threads,
one delta of a thread a bulk, end to end through the Python client and from outside
over HTTP beside bare ``XADD`` (see :mod:`bench.spread.main`)."""
