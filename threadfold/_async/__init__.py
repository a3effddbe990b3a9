"""The clients' asyncio sources; ``../_sync`` is generated from them
(``python -m tests.unasync``; tests/test_generated.py fails when it is stale)."""
