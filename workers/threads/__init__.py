"""The thread service: every operation a thread has, defined once for the HTTP API and the direct
clients."""
