"""Ingest: a delta checked, ids stamped, encoded, appended; the wake-ups it sends."""
