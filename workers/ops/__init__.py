"""Operator tooling: the CLI, `threadfold up`, the demo, process supervision, recompute jobs."""
