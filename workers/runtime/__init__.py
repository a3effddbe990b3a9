"""The Celery runtime: the app, its tasks, the drain, recompute on the workers' side."""
