"""The peer benchmark: threadfold beside the system a LangGraph user picks instead, one
run, one machine, one workload (``python -m bench.peer``; see :mod:`bench.peer.main`)."""
