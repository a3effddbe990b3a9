"""Replay: a consistent prefix of a thread's log read (:mod:`.prefix`), folded one delta at a
time (:mod:`.replay`) for time travel, audit, rebuild and recompute. Below the thread
service and the Celery runtime, which both use it."""
