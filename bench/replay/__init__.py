"""The replay benchmark (``python -m bench.replay``; :mod:`bench.replay.main`): the threads
it replays, and the timed runs."""
