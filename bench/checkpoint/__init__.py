"""The checkpoint benchmark: LangGraph's checkpoints of a conversation in PostgreSQL and
in threadfold, read at depth and driven by an agent loop (``python -m bench.checkpoint``;
see :mod:`bench.checkpoint.main`)."""
