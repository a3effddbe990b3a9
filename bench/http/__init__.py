"""The HTTP benchmark (``python -m bench.http``; :mod:`bench.http.main`): wrk runs, a
paced generator, the running service, profiles, the report."""
