"""The thread lifecycle benchmark (``python -m bench.lifecycle``; :mod:`bench.lifecycle.main`):
Redis memory per idle thread at 10^5 and 10^6 small threads, what the TTL sweep returns
of it and at what cost, and what a search or a count costs as the threads grow."""
