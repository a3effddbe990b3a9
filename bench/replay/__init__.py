"""The replay benchmark's parts: the threads it replays, and the timed runs."""
