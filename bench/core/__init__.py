"""The core benchmark: reducers, the incremental fold, conversion and codec against
LangGraph / LangChain, in one process (``python -m bench.core``; :mod:`bench.core.main`)."""
